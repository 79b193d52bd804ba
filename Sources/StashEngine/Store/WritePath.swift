package import Foundation

/// What changes a store's content: a write (one record appended with one `pwrite`, then the index),
/// a batch, removals, and the store emptied. Made for each call (``DiskStore/writer``) on the store's
/// queue; what it changes is the store's (its files, ``SegmentLog``, and its index).
package struct WritePath {
    let store: DiskStore

    /// What a committed write leaves to its caller, off the queue (``DiskEngine/write(_:_:expiry:now:config:memoryLayer:putInMemory:onCommit:)``).
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
    /// - Parameters:
    ///   - staged: The value file already written off the queue for this very write
    ///     (``DiskEngine/stage(_:_:config:)``), if any; this call ends it (names it in a record, or
    ///     removes it).
    ///   - memoryLayer: The memory layer that takes the new value (`putInMemory`, given the value
    ///     file's path), in the index's hold where every other layer drops the key; nil: all drop it.
    package func write(_ key: String, _ data: Data, staged: StagedValue? = nil, expiry: Date, now: Date, maxSize: Int,
               durable: Bool, storesValuesAsFiles: Bool = false, memoryLayer: AnyObject? = nil,
               putInMemory: (_ path: String?) -> Void = { _ in }) throws -> WriteOutcome {
        let log = store.log // loaded once for the whole write
        store.assertOnQueue()
        var staged = staged
        defer { staged?.file.remove() } // not used: no record names it
        try store.checkWritable()
        try DiskStore.validate(key: key, size: data.count, maxSize: maxSize)
        store.applyMemoryHits(now: now)
        try store.ensureActive()
        // Staged in a folder that is no longer the store's (removed and made anew meanwhile), or
        // removed underneath: written again below, in the folder the store has now.
        if let file = staged?.file, file.folder !== log.values.handle || !file.exists {
            file.remove()
            staged = nil
        }
        // The previous bytes only for key observers (`KeyChange.edit(before:after:)`).
        let previousData = store.client?.hasKeyObservers(key) == true ? store.record(forKey: key).flatMap { try? log.load(key, $0) } : nil
        let value: StoredValue
        if DiskStore.needsFile(size: data.count, storesValuesAsFiles: storesValuesAsFiles) {
            let file = try staged ?? StagedValue(log.writeValue(data, durable: durable), folder: log.values.handle, size: data.count)
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
                    return try log.append(durable: durable, length: length) { out, salt in
                        _ = SegmentFormat.encodeSet(key: UnsafeRawBufferPointer(utf8), expiry: expiry, time: time, value: value,
                                                    inlineBytes: bytes, salt: salt, into: out)
                        return length
                    }
                }
            }
        } catch {
            if case .file(let id, _, _) = value { log.values.remove(id) }
            throw error
        }
        let record = DiskRecord(segment: location.segment, offset: UInt32(location.offset), length: UInt32(location.length),
                                value: value, expiry: expiry, lastAccess: time, keyHash: store.keyHash(key))
        let path = log.filePath(of: record)
        let previous = store.withIndex { index in
            // In the index's hold: see `sharedIndex`. A reader that finds the new copy in memory finds
            // the new record in the index too; a trim below that evicts it drops it from memory again.
            if let memoryLayer {
                store.invalidateMemory(key: key, except: memoryLayer)
                putInMemory(path)
            } else {
                store.invalidateMemory(key: key)
            }
            return index.set(key, record)
        }
        if let previous { store.forget(previous) }
        store.totalSize += record.size
        store.earliestExpiry = min(store.earliestExpiry, expiry)
        store.changesSinceDirectory += 1
        // Asked at each of the 64 writes from the minimum on, then every 64 (each asks the index).
        let beyond = store.changesSinceDirectory - store.thresholds.directoryBuilderMinimum
        if beyond >= 0, beyond < 64 || beyond & 63 == 0, store.directoryBuilder == nil { store.startDirectoryBuilderIfDue() }
        store.client?.publish(.set(key: key, value: data, previous: previousData))
        var outcome = WriteOutcome(path: path, replaced: previous.flatMap(log.valueFile(of:)),
                                   syncPosition: durable ? location.end : nil)
        // The write is committed: a failing trim is reported (the limit could not be held), a
        // failing compaction is not (it is only housekeeping; a later write retries it).
        if maxSize > 0, store.totalSize > maxSize {
            do { try trim(toSize: maxSize, now: now) } catch { outcome.trimError = error }
        }
        store.compaction.startIfNeeded()
        store.log.folderLoss.didAppend() // the quiet gap runs from the end of the write, not of its append
        return outcome
    }
}
