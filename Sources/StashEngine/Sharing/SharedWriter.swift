/// Writers in several processes (``SharingMode/sharedWriter``, `DiskConfig.allowsWritersInOtherProcesses`).
///
/// Each operation runs holding the folder's exclusive lock, taken when it starts and released when it
/// ends (never between operations, so an app suspended between them holds no lock). Holding it, the
/// store first catches up with what other processes did since its last operation, through the
/// shared file (``SharedState``), as a reader does: nothing changed is two loads; records appended to
/// the active segment are replayed; a change to the store's files (a new segment, a compaction, a key
/// directory, `removeAll`, another writer's open) opens the store anew from its files. A process
/// killed inside an operation leaves the shared file's "operation in progress" word set: the next
/// process to take the lock finds it and opens the store anew from its files (cutting off a torn
/// record, removing a value file no record names), then tells the others.
final class SharedWriter: CatchingUp, ProcessSharing {
    /// Where this store stands with the folder's lock.
    enum LockState {
        /// Between operations: the lock is free for other processes.
        case released
        /// Inside an operation, holding the lock; `failure`: why catching up failed (the operation throws it).
        case held(failure: (any Error)?)
        /// The lock could not be taken: the operation throws this.
        case unavailable(any Error)
        /// A read runs without the lock, since nothing changed since the last operation (``runOperation(_:readsWithoutLock:_:)``);
        /// `needsLock`: it met a failure, and must run again holding it.
        case readingWithoutLock(needsLock: Bool)
        /// A read without the lock, inside which a call back into the store took it (``enterNestedCall(_:)``):
        /// the read runs again once it ends, holding it from the start, and fails rather than drop
        /// anything meanwhile (the catch-up may have replaced the record it had found).
        case heldInsideRead(failure: (any Error)?)
        /// A read without the lock, inside which a call back into the store could not take it: that
        /// call throws this; the read itself stands (it wrote nothing).
        case refusedInsideRead(any Error)
    }

    private(set) var lock = LockState.released
    /// A catch-up failed half-way: the next operation opens the store anew from its files (and so
    /// does the next process to take the lock, until one has).
    private var needsReopen = false

    var mode: SharingMode { .sharedWriter }

    /// Opened holding the folder's lock (``StoreFolder`` took it), as one operation: from the files,
    /// whatever the shared file says (a process killed inside an operation included).
    func open(_ store: DiskStore) throws {
        lock = .held(failure: nil)
        store.log.folder.shared?.operationInProgress = true
        defer { endOperation(store) }
        do {
            try store.open()
        } catch {
            needsReopen = true // stays set: the next process opens the store from its files
            throw error
        }
    }

    /// As one more operation: caught up, so that what it writes (access records, a key directory)
    /// follows what the other processes did.
    func close(_ store: DiskStore) {
        beginOperation(store)
        defer { endOperation(store) }
        guard case .held(failure: nil) = lock else { return store.housekeeping.wait() }
        store.finishWriting()
    }

    /// Runs `body` holding the lock; a read (`readsWithoutLock`) runs without it if the shared file
    /// says nothing changed since this store's last operation, and again holding it if it finds it
    /// needs it (a file another process removed since, access records to write, a call back into
    /// the store from inside it).
    ///
    /// The shared file must still be the one at its name, unchanged in place (its ``SharedState/Seal``,
    /// one `fstat`, as under the lock): a process that opened the store after it was deleted publishes
    /// to another, which this store's mapping would never show.
    func runOperation(_ store: DiskStore, readsWithoutLock: Bool, _ body: (DiskStore) -> Void) {
        store.assertOnQueue()
        if readsWithoutLock, readWithoutLock(store, body) { return }
        beginOperation(store)
        body(store)
        endOperation(store)
    }

    private func readWithoutLock(_ store: DiskStore, _ body: (DiskStore) -> Void) -> Bool {
        guard followWatch.isCurrent, store.log.pendingAccesses.count < 255, !needsReopen else { return false }
        lock = .readingWithoutLock(needsLock: false)
        body(store)
        switch lock {
        case .readingWithoutLock(let needsLock):
            lock = .released
            return !needsLock
        case .refusedInsideRead:
            lock = .released
            return true
        case .heldInsideRead, .held, .unavailable:
            // A call back into the store from inside the read took the lock (``enterNestedCall(_:)``):
            // its catch-up may have replaced what the read found and kept in memory, so memory goes
            // and the read runs again, holding the lock from the start.
            store.invalidateMemory(nil)
            endOperation(store)
            return false
        case .released:
            return false
        }
    }

    /// A call from inside a read that runs without the lock (a transformer that calls back into the
    /// store): it must not write beside another process, so the lock is taken (and the store caught
    /// up) here; the read runs again once it ends.
    func enterNestedCall(_ store: DiskStore) {
        switch lock {
        case .readingWithoutLock, .refusedInsideRead: beginOperation(store)
        case .released, .held, .heldInsideRead, .unavailable: return
        }
        switch lock {
        case .held(let failure): lock = .heldInsideRead(failure: failure)
        case .unavailable(let error): lock = .refusedInsideRead(error)
        case .released, .heldInsideRead, .readingWithoutLock, .refusedInsideRead: break
        }
    }

    /// Not without the lock: a read that runs without it, and an operation that could not take it
    /// (its body runs all the same, and records a memory layer's hits: appended now, they would land
    /// on the records of the process that holds the lock).
    var mayWriteNow: Bool {
        switch lock {
        case .readingWithoutLock, .heldInsideRead, .refusedInsideRead, .unavailable: false
        case .released, .held: true
        }
    }

    func readFailed(_ error: any Error, in store: DiskStore) -> AfterFailedRead {
        switch lock {
        case .readingWithoutLock, .refusedInsideRead:
            lock = .readingWithoutLock(needsLock: true) // another process may have changed the file since: again, holding the lock
            return .fail
        case .heldInsideRead:
            return .fail
        case .released, .held, .unavailable:
            return .dropIfDamaged
        }
    }

    func checkOperation() throws {
        switch lock {
        case .held(let failure?), .heldInsideRead(let failure?), .unavailable(let failure), .refusedInsideRead(let failure): throw failure
        case .held(nil), .heldInsideRead(nil), .released, .readingWithoutLock: break
        }
    }

    /// Takes the folder's lock for one operation and catches up (see the type's summary).
    func beginOperation(_ store: DiskStore) {
        let folder = store.log.folder
        do {
            try folder.lockForOperation()
        } catch {
            lock = .unavailable(error)
            return
        }
        lock = .held(failure: nil)
        guard var shared = folder.shared else { return }
        // The shared file deleted or replaced: a writer that opens now uses the file at the path, so
        // every writer moves to it (made anew if missing), and opens the store from its files, since
        // what happened on the other file is not known. The old file's counter moves, so that the
        // processes still mapping it come to look at their next call (memory hits included). Not in a
        // removed folder: the operation opens the path anew (``DiskStore/ensureActive(checkingNow:)``).
        var moved = false
        let seal = shared.seal
        if seal == nil, !folder.handle.isRemoved {
            do {
                shared = try SharedState.openForWriting(in: folder.handle, store: folder.storeID, holdingLock: false)
            } catch {
                lock = .held(failure: error) // a FIFO or a link in its place: nothing is written unpublished
                return
            }
            folder.shared?.retire()
            folder.shared = shared
            moved = true
        }
        let interrupted = moved || shared.operationInProgress
        // Written in place by another program since this store's last operation (older bytes put back,
        // say): its counter and length may be ones this store has seen, so the files decide.
        let rewritten = !moved && seal != followed.seal
        shared.operationInProgress = true
        do {
            if interrupted || rewritten || shared.counter != followed.counter || needsReopen {
                let changes = needsReopen ? [] : changesSinceOwnEnd(store)
                let before = foreignBefore(store, changes)
                try openAgainAsWriter(store, announcing: interrupted)
                publishForeign(store, changes, before: before)
            } else if shared.publishedLength != followed.length {
                shared.acquire()
                followed.replayer = Replayer() // this store's own writes moved keys since: no map of positions kept
                if !replayTail(store, upTo: shared.publishedLength) {
                    // Not whole records (damaged): opened anew from the files (announced if the open
                    // cut a damaged tail off), the observers told of the whole records it finds.
                    let changes = changesSinceOwnEnd(store)
                    let before = foreignBefore(store, changes)
                    try openAgainAsWriter(store, announcing: false)
                    publishForeign(store, changes, before: before)
                }
            }
        } catch {
            needsReopen = true
            lock = .held(failure: error)
        }
    }

    /// What other processes changed past this store's end of its active segment, read before the store
    /// opens anew (``CatchingUp/changes(after:through:in:)``); none without an active segment.
    private func changesSinceOwnEnd(_ store: DiskStore) -> [ForeignChange] {
        guard let active = store.log.active else { return [] }
        return changes(after: (active, active.length), through: nil, in: store)
    }

    /// Ends an operation begun by ``beginOperation(_:)``: records what the store is caught up to (its
    /// own changes included) and releases the lock.
    func endOperation(_ store: DiskStore) {
        switch lock {
        case .held, .heldInsideRead: lock = .released
        case .released, .unavailable, .readingWithoutLock, .refusedInsideRead: return
        }
        let folder = store.log.folder
        if let shared = folder.shared {
            if needsReopen {
                // Left half-way: the next process to take the lock opens the store from its files too.
                followed.counter = 0
            } else {
                noteCaughtUp(store, shared)
                shared.operationInProgress = false
            }
        }
        folder.handle.unlock()
    }

    /// The folder was made anew at the store's path: its lock (``StoreFolder`` took it) is held for
    /// the rest of this operation, the old folder's released.
    func adoptReopened(_ fresh: StoreFolder, replacing old: StoreFolder) {
        old.handle.unlock()
        fresh.shared?.operationInProgress = true
    }

    /// Records the shared file's counter, published length and seal as this store's own state (the
    /// seal taken now: this operation's own stores through the mapping may have moved its change time).
    private func noteCaughtUp(_ store: DiskStore, _ shared: SharedState) {
        followed.counter = shared.counter
        followed.length = shared.publishedLength
        followed.segment = store.log.active?.id
        followed.seal = shared.seal
        noteFollowed(store)
        markFollowed(store)
    }

    /// Opens the store anew from its files, holding the lock: another process changed them, or was
    /// killed inside an operation (`announcing`: this open may then have changed the files, so the
    /// other processes open the store anew too). So they do when the open cut a damaged tail off the
    /// active segment: this store's next record there could end at the very length they followed,
    /// which they would take for nothing new.
    private func openAgainAsWriter(_ store: DiskStore, announcing: Bool) throws {
        let used = pendingUses(store)
        try openAgain(store, publishing: announcing)
        if !announcing, let active = store.log.active, let shared = store.log.folder.shared, shared.structure.segment == active.id,
           active.length < shared.publishedLength {
            store.log.publishStructure() // the active segment is now shorter than what the others followed
        }
        needsReopen = false
        if let shared = store.log.folder.shared { noteCaughtUp(store, shared) }
        // Reads not yet written as access records count as use in the store opened anew too (its
        // records may have moved: found again by key), so maxSize evicts by every read.
        for (key, time) in used {
            // Not when another process used it later (its access record was replayed).
            guard let (record, recency) = store.withIndex({ index in
                index.peek(key).map { $0.lastAccess <= time } == true ? index.markUsed(key, time: time) : nil
            }) else { continue }
            store.noteAccess(record, time: time, recency: recency)
        }
    }

    /// The keys and times of the reads the store has not written as access records yet, oldest first
    /// (found by the position and hash each one names: no pass over the whole index).
    private func pendingUses(_ store: DiskStore) -> [(key: String, time: Double)] {
        store.log.putPendingAccessesInOrderOfUse()
        let pending = store.log.pendingAccesses
        guard !pending.isEmpty else { return [] }
        func position(_ segment: UInt32, _ offset: UInt32) -> UInt64 { UInt64(segment) << 32 | UInt64(offset) }
        var hashes: [UInt64: UInt64] = [:]
        for access in pending { hashes[position(access.segment, access.offset)] = access.keyHash }
        let keys = store.withIndex { $0.keys(at: hashes) }
        return pending.compactMap { access in keys[position(access.segment, access.offset)].map { ($0, access.time) } }
    }
}
