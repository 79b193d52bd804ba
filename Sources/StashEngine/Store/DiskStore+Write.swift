package import Foundation

/// Writing: one record per write, appended with one `pwrite` (``append(durable:length:_:)``), then the index.
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
        KeyHash.of(key, seed: folder.storeID)
    }

    package func checkWritable() throws {
        if !writes { throw StorageError.readOnly(directory: directory) }
        try sharing.checkOperation()
    }

    /// What a committed write leaves to its caller, off the queue (``DiskEngine/write(_:_:expiry:now:config:onCommit:)``).
    package struct WriteOutcome {
        /// The value's file (nil when packed).
        package var path: String?
        /// The value file the write replaced: removed once the write is durable.
        package var replaced: ValueFileRef?
        /// The group commit position a durable write waits for.
        var syncPosition: UInt64?
        /// Trimming to `maxSize` failed after the write was committed: the limit could not be held.
        var trimError: (any Error)?
    }

    /// Stores `data` for `key`, then trims to `maxSize`.
    /// - Parameter staged: The value file already written off the queue for this very write
    ///   (``DiskEngine/stage(_:_:config:)``), if any; this call ends it (names it in a record, or
    ///   removes it).
    package func write(_ key: String, _ data: Data, staged: StagedValue? = nil, expiry: Date, now: Date, maxSize: Int,
               durable: Bool, storesValuesAsFiles: Bool = false) throws -> WriteOutcome {
        assertOnQueue()
        var staged = staged
        defer { staged?.file.remove() } // not used: no record names it
        try checkWritable()
        try Self.validate(key: key, size: data.count, maxSize: maxSize)
        applyMemoryHits(now: now)
        try ensureActive()
        // Staged in a folder that is no longer the store's (removed and made anew meanwhile), or
        // removed underneath: written again below, in the folder the store has now.
        if let file = staged?.file, file.folder !== values.handle || !file.exists {
            file.remove()
            staged = nil
        }
        // The previous bytes only for key observers (`KeyChange.edit(before:after:)`).
        let previousData = client?.hasKeyObservers(key) == true ? record(forKey: key).flatMap { try? load(key, $0) } : nil
        let value: StoredValue
        if Self.needsFile(size: data.count, storesValuesAsFiles: storesValuesAsFiles) {
            let file = try staged ?? StagedValue(values.write(data, durable: durable), folder: values.handle, size: data.count)
            staged = nil
            value = .file(id: file.file.id, size: data.count, hash: file.hash)
        } else {
            value = .inline(size: data.count)
        }
        let time = StoredTime.seconds(now)
        let expiry = StoredTime.seconds(expiry)
        let location: (segment: UInt32, offset: Int, length: Int, end: UInt64)
        do {
            var key = key
            location = try key.withUTF8 { utf8 in
                try data.withUnsafeBytes { bytes in
                    let length = SegmentFormat.setLength(keyCount: utf8.count, expiry: expiry, inlineCount: bytes.count, value: value)
                    return try append(durable: durable, length: length) { out, salt in
                        _ = SegmentFormat.encodeSet(key: UnsafeRawBufferPointer(utf8), expiry: expiry, time: time, value: value,
                                                    inlineBytes: bytes, salt: salt, into: out)
                        return length
                    }
                }
            }
        } catch {
            if case .file(let id, _, _) = value { values.remove(id) }
            throw error
        }
        let record = DiskRecord(segment: location.segment, offset: UInt32(location.offset), length: UInt32(location.length),
                                value: value, expiry: expiry, lastAccess: time, keyHash: keyHash(key))
        invalidateMemory([key]) // before the index: see `sharedIndex`
        let previous = withIndex { index in index.set(key, record) }
        if let previous { forget(previous) }
        totalSize += record.size
        earliestExpiry = min(earliestExpiry, expiry)
        changesSinceDirectory += 1
        client?.publish(.set(key: key, value: data, previous: previousData))
        var outcome = WriteOutcome(path: filePath(of: record), replaced: previous?.fileID.map(values.ref),
                                   syncPosition: durable ? location.end : nil)
        // The write is committed: a failing trim is reported (the limit could not be held), a
        // failing compaction is not (it is only housekeeping; a later write retries it).
        if maxSize > 0, totalSize > maxSize {
            do { try trim(toSize: maxSize, now: now) } catch { outcome.trimError = error }
        }
        startCompactionIfNeeded()
        return outcome
    }

    /// Appends pending access records and the records `encode` stores (with the active segment's
    /// salt) into the `length` bytes it is given, in one `pwrite`; returns the segment and offset where
    /// the last record starts (`encode` returns its length), its length, and the group commit position after it.
    ///
    /// The bytes are the store's ``scratch``, kept from one append to the next: a write allocates
    /// nothing of its own and encodes each field in place (``SegmentFormat/encodeSet(key:expiry:time:value:inlineBytes:salt:into:)``).
    @discardableResult
    package func append(durable: Bool = false, length: Int, _ encode: (UnsafeMutableRawBufferPointer, UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
        let accessBytes = pendingAccesses.count * SegmentFormat.accessLength
        let total = accessBytes + length
        if scratch.count < total { scratch = [UInt8](repeating: 0, count: max(total, 4096)) }
        let last = try scratch.withUnsafeMutableBytes { bytes in
            for (number, access) in pendingAccesses.enumerated() {
                let start = number * SegmentFormat.accessLength
                SegmentFormat.encodeAccess(segment: access.segment, offset: access.offset, time: access.time, keyHash: access.keyHash, salt: segment.salt,
                                           into: UnsafeMutableRawBufferPointer(rebasing: bytes[start..<(start + SegmentFormat.accessLength)]))
            }
            let last = encode(UnsafeMutableRawBufferPointer(rebasing: bytes[accessBytes..<total]), segment.salt)
            try segment.append(UnsafeRawBufferPointer(rebasing: bytes[0..<total]))
            return last
        }
        folder.shared?.publish(length: segment.length) // readers in other processes: written (`pwrite` returned)
        let offset = segment.length - last
        segment.deadBytes += accessBytes
        pendingAccesses.removeAll(keepingCapacity: true)
        appendCount += 1
        folderLoss.didAppend()
        let end = groupCommit.noteAppend(total, to: segment, durable: durable)
        if scratch.count > 1 << 20 { scratch = [] } // do not keep a large value's buffer
        if segment.length >= thresholds.segmentLimit { try? roll() }
        return (segment.id, offset, last, end)
    }

    /// As ``append(durable:length:_:)``, for records that `encode` appends to an array (batches, and
    /// records whose length is not worked out beforehand).
    @discardableResult
    package func append(durable: Bool = false, _ encode: (inout [UInt8], UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
        var records: [UInt8] = []
        let last = encode(&records, segment.salt)
        return try append(durable: durable, length: records.count) { out, _ in
            records.withUnsafeBytes { out.copyMemory(from: $0) }
            return last
        }
    }

    /// Writes the buffered access records.
    func flushAccesses() throws {
        guard !pendingAccesses.isEmpty, active != nil else { return }
        try append { _, _ in 0 }
    }

    /// Buffers an access record for `record` (a read, or a memory hit): the LRU order survives a restart.
    func noteAccess(_ record: DiskRecord, time: Double) {
        guard writes else { return }
        pendingAccesses.append((record.segment, record.offset, time, record.keyHash))
        accessesSinceDirectory += 1
        if pendingAccesses.count >= 256, sharing.mayWriteNow { try? flushAccesses() }
    }

    /// A record that no longer holds a live value: its bytes become dead, its value file goes later.
    func forget(_ old: DiskRecord) {
        totalSize -= old.size
        markDead(old)
    }

    /// The dead-byte rule (compaction's trigger): a record whose key has a later one, or none, is dead.
    func markDead(_ old: DiskRecord) {
        segments[old.segment]?.deadBytes += FileNumber.saturating(old.length)
    }

    /// The bytes `record` (`length` bytes of `file`, appended after this store's own: another
    /// process's) makes dead, as this store counts its own: the record a set or removal replaces, and
    /// every record but a set itself. Counted before the index takes `record`.
    func countDead(of record: SegmentRecord, length: Int, in file: SegmentFile, index: KeyDirectory) {
        switch record {
        case .set(let key, _):
            if let old = index.peek(key) { markDead(old) }
        case .remove(let key):
            if let old = index.peek(key) { markDead(old) }
            file.deadBytes += length
        case .access, .clear, .batch:
            file.deadBytes += length
        }
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
        if checkingNow { folderLoss.expire() }
        if let active {
            guard folderLoss.isDue() else { return false }
            if !active.isDetached {
                sharing.checkSharedFile(self)
                return false
            }
        }
        guard !folder.handle.isRemoved, folder.handle.isAtPath else {
            try reopen()
            return true
        }
        if let active { segments[active.id] = nil }
        try roll()
        return false
    }

    /// Seals the active segment and starts a new one (carrying `newFloor`, which then becomes the
    /// store's floor). A number a file that is not the store's already has is passed over.
    func roll(floor newFloor: UInt32? = nil) throws {
        var next: SegmentFile?
        while next == nil {
            do {
                next = try SegmentFile.create(id: nextSegmentID, in: folder.handle, store: folder.storeID, floor: newFloor ?? floor,
                                              durable: durable)
            } catch where FileIO.isErrno(error, .EEXIST) {
                nextSegmentID = try Self.segmentID(after: nextSegmentID, skipping: 1)
            }
        }
        guard let next else { return }
        if let newFloor { floor = newFloor }
        try groupCommit.switchFile(to: next)
        nextSegmentID = next.id == .max ? .max : next.id + 1 // the one after .max fails as taken, then runs out
        segments[next.id] = next
        active = next
        publishStructure()
    }

    /// Tells readers in other processes that the store's files changed (``SharedState``): they open
    /// it anew before their next operation.
    func publishStructure() {
        guard writes, let shared = folder.shared else { return }
        shared.publishStructure(store: folder.storeID, segment: active?.id ?? 0, salt: active?.salt ?? 0, length: active?.length ?? 0)
    }

    /// `id + count`, or an error when segment numbers run out (never in practice: 4 billion segments).
    static func segmentID(after id: UInt32, skipping count: UInt32) throws -> UInt32 {
        let (next, overflow) = id.addingReportingOverflow(count)
        if overflow { throw StorageError.corrupted("the store has run out of segment numbers (\(hex(UInt64(id), digits: 8)))") }
        return next
    }
}
