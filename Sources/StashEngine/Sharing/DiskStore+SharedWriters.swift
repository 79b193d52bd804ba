import Foundation

/// Writers in several processes (``DiskConfig/allowsWritersInOtherProcesses``).
///
/// Each operation of such a store runs holding the folder's exclusive lock, taken when it starts and
/// released when it ends (never between operations, so an app suspended between them holds no lock).
/// Holding it, the store first catches up with what other processes did since its last operation,
/// through the shared file (``SharedState``), as a reader does: nothing changed is two loads; records
/// appended to the active segment are replayed; a change to the store's files (a new segment, a
/// compaction, a key directory, `removeAll`, another writer's open) opens the store anew from its
/// files. A process killed inside an operation leaves the shared file's "operation in progress" word
/// set: the next process to take the lock finds it and opens the store anew from its files (cutting
/// off a torn record, removing a value file no record names), then tells the others.
extension DiskStore {
    /// Takes the folder's lock for one operation and catches up (see above). Called by the engine's
    /// queue hop before the operation; ``endSharedOperation()`` after it, whatever happened.
    func beginSharedOperation() {
        sharedOperationError = nil
        do {
            try folder.lockForOperation()
        } catch {
            sharedOperationError = error
            return
        }
        holdsOperationLock = true
        guard var shared = folder.shared else { return }
        // The shared file deleted or replaced: a writer that opens now uses the file at the path, so
        // every writer moves to it (made anew if missing), and opens the store from its files, since
        // what happened on the other file is not known. The old file's counter moves, so that the
        // processes still mapping it come to look at their next call (memory hits included). Not in a
        // removed folder: the operation opens the path anew (``ensureActive(checkingNow:)``).
        var moved = false
        let seal = shared.seal
        if seal == nil, !folder.handle.isRemoved {
            do {
                shared = try SharedState.openForWriting(in: folder.handle, store: folder.storeID, holdingLock: false)
            } catch {
                sharedOperationError = error // a FIFO or a link in its place: nothing is written unpublished
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
            if interrupted || rewritten || shared.counter != followed.counter || needsSharedReopen {
                let changes = needsSharedReopen ? [] : unseenChanges(after: active?.id, from: active?.length ?? 0)
                let before = foreignBefore(changes)
                try openAgainAsSharedWriter(announcing: interrupted)
                publishForeign(changes, before: before)
            } else if shared.publishedLength != followed.length {
                shared.acquire()
                if !replayAppended(upTo: shared.publishedLength) { try openAgainAsSharedWriter(announcing: false) }
            }
        } catch {
            needsSharedReopen = true
            sharedOperationError = error
        }
    }

    /// Runs the read `body` without the lock if the shared file says nothing changed since this store's
    /// last operation; false if it did not, or the read found it needs the lock (a file another process
    /// removed since, access records to write, a call back into the store from inside it): the caller
    /// then runs it holding the lock.
    ///
    /// The shared file must still be the one at its name, unchanged in place (its ``SharedState/Seal``,
    /// one `fstat`, as under the lock): a process that opened the store after it was deleted publishes
    /// to another, which this store's mapping would never show.
    func readWithoutLock(_ body: (DiskStore) -> Void) -> Bool {
        guard followWatch.isCurrent, pendingAccesses.count < 255, !needsSharedReopen else { return false }
        readingWithoutLock = true
        readNeededLock = false
        sharedOperationError = nil
        body(self)
        readingWithoutLock = false
        if holdsOperationLock {
            // A call back into the store from inside the read took the lock (``DiskEngine``'s `run`):
            // its catch-up may have replaced what the read found and kept in memory, so memory goes
            // and the read runs again, holding the lock from the start.
            invalidateMemory(nil)
            endSharedOperation()
            return false
        }
        return !readNeededLock
    }

    /// Ends an operation begun by ``beginSharedOperation()``: records what the store is caught up to
    /// (its own changes included) and releases the lock.
    func endSharedOperation() {
        guard holdsOperationLock else { return }
        holdsOperationLock = false
        if let shared = folder.shared {
            if needsSharedReopen {
                // Left half-way: the next process to take the lock opens the store from its files too.
                followed.counter = 0
            } else {
                noteCaughtUp(shared)
                shared.operationInProgress = false
            }
        }
        folder.handle.unlock()
    }

    /// The failure of the lock or the catch-up that began this operation: the operation throws it.
    func checkSharedOperation() throws {
        if let sharedOperationError { throw sharedOperationError }
    }

    /// Records the shared file's counter, published length and seal as this store's own state (the
    /// seal taken now: this operation's own stores through the mapping may have moved its change time).
    func noteCaughtUp(_ shared: SharedState) {
        followed.counter = shared.counter
        followed.length = shared.publishedLength
        followed.segment = active?.id
        followed.seal = shared.seal
        noteFollowed()
    }

    /// Opens the store anew from its files, holding the lock: another process changed them, or was
    /// killed inside an operation (`announcing`: this open may then have changed the files, so the
    /// other processes open the store anew too).
    private func openAgainAsSharedWriter(announcing: Bool) throws {
        let used = pendingUses()
        forgetIndex(seed: folder.storeID)
        followed = FollowedState()
        try open(publishing: announcing)
        needsSharedReopen = false
        if let shared = folder.shared { noteCaughtUp(shared) }
        // Reads not yet written as access records count as use in the store opened anew too (its
        // records may have moved: found again by key), so maxSize evicts by every read.
        for (key, time) in used {
            // Not when another process used it later (its access record was replayed).
            guard let record = withIndex({ index in index.peek(key).map { $0.lastAccess <= time } == true ? index.touch(key, time: time) : nil })
            else { continue }
            noteAccess(record, time: time)
        }
    }

    /// The keys and times of the reads this store has not written as access records yet, oldest first
    /// (found by the position and hash each one names: no pass over the whole index).
    private func pendingUses() -> [(key: String, time: Double)] {
        guard !pendingAccesses.isEmpty else { return [] }
        func position(_ segment: UInt32, _ offset: UInt32) -> UInt64 { UInt64(segment) << 32 | UInt64(offset) }
        var hashes: [UInt64: UInt64] = [:]
        for access in pendingAccesses { hashes[position(access.segment, access.offset)] = access.keyHash }
        let keys = withIndex { $0.keys(at: hashes) }
        return pendingAccesses.compactMap { access in keys[position(access.segment, access.offset)].map { ($0, access.time) } }
    }

    /// Replays the records other processes appended to the active segment since this store's last
    /// operation, up to `length`; false if it cannot (the active segment is not the one it had).
    private func replayAppended(upTo length: Int) -> Bool {
        guard let file = active, followed.segment == file.id, length >= file.length else { return false }
        guard length > file.length else { return true }
        let start = file.length
        guard let bytes = try? FileIO.read(file.fd, at: start, count: length - start, path: file.path),
              bytes.count == length - start else { return false }
        var appended: [(record: SegmentRecord, offset: Int, length: Int)] = []
        let scan = bytes.withUnsafeBytes { raw in
            SegmentFormat.scan(raw, salt: file.salt, from: 0) { record, offset, length in appended.append((record, start + offset, length)) }
        }
        // Written whole by a process holding the lock: anything else is not what it published.
        guard scan.validEnd == bytes.count, scan.damaged.isEmpty else { return false }
        invalidateMemory(nil) // before the index: see `sharedIndex`
        let changes = isObserved ? bytes.withUnsafeBytes { raw in
            Self.foreignChanges(in: raw, appended.map { ($0.record, $0.offset - start, $0.length) })
        } : []
        let before = foreignBefore(changes)
        var replayer = Replayer()
        withIndex { index in
            for (record, offset, length) in appended {
                // The bytes a record makes dead, as this store counts its own (compaction's trigger).
                switch record {
                case .set(let key, let info):
                    earliestExpiry = min(earliestExpiry, info.expiry)
                    if let old = index.peek(key) { segments[old.segment]?.deadBytes += FileNumber.saturating(old.length) }
                case .remove(let key):
                    if let old = index.peek(key) { segments[old.segment]?.deadBytes += FileNumber.saturating(old.length) }
                    file.deadBytes += length
                case .access, .clear, .batch:
                    file.deadBytes += length
                }
                replayer.visit(record, segment: file.id, offset: offset, length: length, store: self, index: &index)
            }
        }
        file.length = length
        changesSinceDirectory += appended.count
        publishForeign(changes, before: before)
        return true
    }
}
