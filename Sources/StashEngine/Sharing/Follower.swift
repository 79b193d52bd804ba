/// A reader (``SharingMode/follower``): it writes nothing, holds no lock between operations (so a
/// writer can open while it reads), and before each operation catches up with what a writer in another
/// process did since the last one, so that every write that returned before the operation is seen
/// (Contract item 11).
final class Follower: CatchingUp, ProcessSharing {
    var mode: SharingMode { .follower }
    /// A reader reads without the queue while the shared file says it holds every change the writer
    /// published (``FollowWatch/isCurrent``, checked by the engine before each such read), as its
    /// memory hits and index reads already do; otherwise the queue catches up first.
    override var readsOffQueue: Bool { true }
    /// How many reads of the operation under way failed and were read again (``readFailed(_:in:)``).
    private var readsAgain = 0
    /// A catch-up inside the operation under way (a failed read's, `check`'s) changed the store: what
    /// the operation read before it may be older than the store now is, and a memory layer may have
    /// kept it (a value decoded around a transformer's own read of the store).
    private var changedInsideOperation = false

    /// Opens the store: the folder's shared lock, taken while the folder opened if no writer had it,
    /// goes once the index is built (``StoreFolder/endOpening()``).
    func open(_ store: DiskStore) throws {
        defer { store.log.folder.endOpening() }
        try following(store) { try store.open(publishing: false) }
        markFollowed(store)
    }

    func close(_ store: DiskStore) {
        store.log.folder.shared?.unlock()
        store.log.folder.handle.unlock()
    }

    func beginOperation(_ store: DiskStore) {
        readsAgain = 0
        catchUp(store)
    }

    /// Memory goes if the store changed inside the operation (``changedInsideOperation``): the
    /// next read of a key another process changed then finds what it wrote, not an older copy.
    func endOperation(_ store: DiskStore) {
        guard changedInsideOperation else { return }
        changedInsideOperation = false
        store.invalidateMemory(nil)
    }

    /// Another process may have replaced the value file since the catch-up before this read: caught
    /// up again, the key is read as it is now. Twice per operation at most: a catch-up that cannot
    /// tell what changed (no shared file while a writer is at work) opens the store anew at every
    /// call, and a value file damaged for good would be read again, deeper each time, without end.
    func readFailed(_ error: any Error, in store: DiskStore) -> AfterFailedRead {
        guard error is StorageError, readsAgain < 2, catchUp(store) else { return .dropIfDamaged }
        readsAgain += 1
        changedInsideOperation = true
        return .readAgain
    }

    func keyChanged(_ key: String, since record: DiskRecord, in store: DiskStore) -> Bool {
        if catchUp(store) { changedInsideOperation = true }
        return store.record(forKey: key) != record
    }

    /// Catches up with what a writer in another process did since the last call. When nothing changed
    /// this is two loads from the shared file's mapping and one `fstat` of it (its
    /// ``SharedState/Seal``); when the active segment grew, its new records are replayed; when the
    /// store's files changed (a segment started, a compaction, a `removeAll`, a writer opened), the
    /// store is opened anew, and so it is when the shared file was deleted, replaced or written in
    /// place by another program (what it says may then be old: the files decide). Without a shared
    /// file (no writer of this version ever opened the store) it looks for one, which costs a `fstatat`.
    /// - Returns: Whether anything changed.
    @discardableResult
    func catchUp(_ store: DiskStore) -> Bool {
        store.assertOnQueue()
        defer { markFollowed(store) } // also when an observer came since the last change
        let folder = store.log.folder
        guard let shared = folder.shared else {
            let found = SharedState.openForReading(in: folder.handle)
            if let found, isFollowable(found, in: folder) {
                folder.shared = found
            } else if found == nil, !folder.writerIsActive {
                return false
            }
            // Found; or none while a writer is at work (someone deleted it, and the writer makes a new
            // one when it next checks its folder): nothing tells what changed, so the files do, every call.
            openAgainTellingObservers(store)
            return true
        }
        let seal = shared.seal
        if seal == nil {
            // No longer at its name: the writers publish to the file there now (if any yet).
            folder.shared = SharedState.openForReading(in: folder.handle).flatMap { isFollowable($0, in: folder) ? $0 : nil }
        } else if seal == followed.seal, shared.counter == followed.counter {
            let length = shared.publishedLength
            guard length != followed.length else { return false }
            shared.acquire()
            if replayTail(store, upTo: length) {
                followed.length = length
                noteFollowed(store)
                return true
            }
            // Not whole records of the segment followed (damaged, say): opened anew as for any other
            // change, and the observers still told of the whole records after the damage.
        }
        openAgainTellingObservers(store)
        return true
    }

    /// Opens the store anew (``openAgainForReading(_:)``) and tells the observers of the changes in the
    /// records between where the store had read to (its last segment's end) and where the open read to:
    /// read after the open, so that what a writer appends during it is told once, by this catch-up or
    /// by the next (read before it, a record appended meanwhile would be in the index but never told).
    /// What they replaced or removed is taken from the index and segments the store had before.
    private func openAgainTellingObservers(_ store: DiskStore) {
        guard store.isObserved else { return openAgainForReading(store) }
        func lastSegment() -> SegmentFile? { store.log.segments.keys.max().flatMap { store.log.segments[$0] } }
        let read = lastSegment().map { (file: $0, length: $0.length) }
        let old = (index: store.withIndex { $0 }, segments: store.log.segments)
        openAgainForReading(store)
        let end = lastSegment().map { (id: $0.id, length: $0.length) } ?? (0, 0)
        let changes = changes(after: read, through: end, in: store)
        publishForeign(store, changes, before: foreignBefore(store, changes, old: old))
    }

    /// Whether the writers publish to `found`, the shared file at the folder's name now: the writer that
    /// keeps the store to itself holds its lock, or a writer among several is inside an operation, or
    /// no writer holds the folder's lock (writers among several move to the file at the name before they
    /// write). Not a file another program put there (a copy renamed over it, as a backup restore does)
    /// while a writer publishes to its own, nameless since: it would say nothing changed until that
    /// writer's next check of it (``FolderLossCheck/sharedFileInterval``); the reader reads the files at
    /// every call meanwhile, as when there is none.
    private func isFollowable(_ found: SharedState, in folder: StoreFolder) -> Bool {
        if found.isHeldByWriter || found.operationInProgress { return true }
        guard (try? folder.handle.tryLock(exclusive: false)) == true else { return false }
        folder.handle.unlock()
        return true
    }

    /// Reads what the shared file says before an open (so that a change during the open is caught by
    /// the next ``catchUp(_:)``), runs `open`, and records it as caught up to.
    private func following(_ store: DiskStore, _ open: () throws -> Void) rethrows {
        let folder = store.log.folder
        let shared = folder.shared
        let seal = shared?.seal
        let structure = shared?.structure
        let length = shared?.publishedLength ?? 0
        try open()
        followed = FollowedState(counter: structure?.counter ?? 0, length: length, seal: seal)
        followed.lastRead = store.log.segments.keys.max()
        if let shared, let structure, shared.describes(store: folder.storeID),
           let segment = store.log.segments[structure.segment], segment.salt == structure.salt, store.log.segments.keys.max() == segment.id {
            followed.segment = segment.id
        }
        noteFollowed(store)
    }

    /// Opens the store anew, as when it was first opened: the writer changed its files. Tried again
    /// while the writer changes them during the attempt (its counter moved), a few times.
    /// The index counts as being rebuilt across every attempt (``DiskStore/rebuildingIndex(_:)``): an
    /// attempt the writer's change overtook may have built it from files half changed.
    private func openAgainForReading(_ store: DiskStore) {
        store.rebuildingIndex { openAgainWhileChanging(store) }
    }

    /// The attempts of ``openAgainForReading(_:)``: until the writer's counter stays put across one.
    private func openAgainWhileChanging(_ store: DiskStore) {
        let folder = store.log.folder
        for attempt in 0..<8 {
            let counter = folder.shared?.counter
            store.recoveryIssues = folder.issues
            folder.beginOpeningAgain()
            defer { folder.endOpening() }
            do {
                try following(store) { try openAgain(store, publishing: false) }
            } catch {
                store.recoveryIssues.append(.corrupted("the store could not be read again after another process changed it: \(error)"))
                followed = FollowedState(counter: counter ?? 0, length: folder.shared?.publishedLength ?? 0, seal: folder.shared?.seal)
                noteFollowed(store)
                return
            }
            if folder.shared?.counter == counter || attempt == 7 { return }
        }
    }
}
