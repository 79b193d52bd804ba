package import Foundation

/// What every write checks and keeps: the key and size limits, the access records, the folder still there.
extension DiskStore {
    // MARK: Writing

    /// Checks what a write must refuse before any file is written.
    package static func validate(key: String, size: Int, maxSize: Int) throws {
        if maxSize > 0, size > maxSize { throw StorageError.valueTooLarge(size: size, maxSize: maxSize) }
        if key.utf8.count > maxKeyLength { throw StorageError.keyTooLong(byteCount: key.utf8.count, limit: maxKeyLength) }
    }

    /// Whether a value of `size` bytes is kept in a file of its own.
    static func needsFile(size: Int, storesValuesAsFiles: Bool) -> Bool {
        storesValuesAsFiles || size >= ValueFiles.threshold
    }

    /// The ``KeyHash`` of `key` in this store.
    func keyHash(_ key: String) -> UInt64 {
        KeyHash.of(key, seed: log.folder.storeID)
    }

    package func checkWritable() throws {
        if !writes { throw StorageError.readOnly(directory: directory) }
        try sharing.checkOperation()
    }

    /// Buffers an access record for `record` (a read, or a memory hit), used at `time` with `recency`
    /// (``KeyDirectory/markUsed(_:time:)``): the LRU order survives a restart. Returns whether it wrote
    /// the buffered records (every 256): a read then asks whether a key uses file is due
    /// (``readNoted(_:time:recency:)``).
    @discardableResult
    func noteAccess(_ record: DiskRecord, time: Double, recency: UInt64) -> Bool {
        guard writes else { return false }
        log.pendingAccesses.append(SegmentLog.Access(record, time: time, recency: recency))
        accessesSinceDirectory += 1
        guard log.pendingAccesses.count >= 256, sharing.mayWriteNow else { return false }
        try? log.flushAccesses()
        return true
    }

    /// ``noteAccess(_:time:recency:)`` for a read from disk, which alone may have the close's key uses
    /// file made ready (``prepareUsesFileIfDue()``): not a memory hit that a write takes on its way to a change.
    func readNoted(_ record: DiskRecord, time: Double, recency: UInt64) {
        if noteAccess(record, time: time, recency: recency) { prepareUsesFileIfDue() }
    }

    /// A record that no longer holds a live value: its bytes become dead, its value file goes later.
    func forget(_ old: DiskRecord) {
        totalSize -= old.size
        log.markDead(old)
    }

    /// Makes sure records can be appended. The folder may have been removed underneath, and maybe
    /// made anew by this or another process: then the store opens whatever stands at its path now,
    /// anew (``reopen()``), and never writes into it otherwise. If only the active segment was
    /// deleted, a new one is started and the entries it held fail their reads (``StorageError/corrupted(_:)``).
    ///
    /// A write right after the previous one skips the `fstat` that tells (``FolderLossCheck`` says
    /// when, and what that gives up); `checkingNow` makes it check regardless.
    /// - Returns: Whether the store was opened anew (files written for it before are gone).
    @discardableResult
    func ensureActive(checkingNow: Bool = false) throws -> Bool {
        try checkWritable()
        // A change is certain now (everything that writes comes here first, after what may refuse it or
        // find nothing to do): a uses file made ready will not be used, and its blocks may be what this
        // change needs on a full disk.
        if preparedUses != nil { dropPreparedUses() }
        if checkingNow { log.folderLoss.expire() }
        if let active = log.active {
            let due = log.folderLoss.due()
            guard due.folder else { return false }
            if !active.isDetached {
                if due.sharedFile {
                    log.folderLoss.didCheckSharedFile()
                    sharing.checkSharedFile(self)
                }
                return false
            }
        }
        guard !log.folder.handle.isRemoved, log.folder.handle.isAtPath else {
            try reopen()
            return true
        }
        if let active = log.active { log.segments[active.id] = nil }
        try log.roll()
        return false
    }

    // MARK: Memory layers

    /// Counts memory hits as use, like disk reads (recorded, so the order survives a restart):
    /// a value that is hot in memory must not be the first evicted from disk.
    package func applyMemoryHits(now: Date) {
        if let client { recordHits(client.takeMemoryHits(), now: now) }
    }

    /// Records `hits` (keys served from memory) as use at `now` (also when a memory layer goes).
    package func recordHits(_ hits: [String], now: Date) {
        let time = StoredTime.seconds(now)
        guard !hits.isEmpty else { return }
        let used = withIndex { $0.markHitsUsed(hits, time: time) }
        for (record, recency) in used { noteAccess(record, time: time, recency: recency) }
    }

    func invalidateMemory(_ keys: [String]?) {
        client?.dropFromMemory(keys)
    }

    func invalidateMemory(key: String) {
        client?.dropFromMemory(key: key)
    }

    /// Drops `key` from every memory layer but `layer`, which takes the new value in the same hold.
    func invalidateMemory(key: String, except layer: AnyObject) {
        client?.dropFromMemory(key: key, except: layer)
    }
}
