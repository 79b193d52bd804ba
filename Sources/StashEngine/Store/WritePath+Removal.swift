package import Foundation

extension WritePath {
    /// Removes `key`'s value, if any; returns the group commit position a durable caller waits for,
    /// and (for a durable removal) the value file to remove once it has.
    @discardableResult
    package func remove(_ key: String, durable: Bool = false) throws -> (position: UInt64?, files: [ValueFileRef]) {
        store.assertOnQueue()
        try store.checkWritable()
        guard var found = store.withIndex({ $0.locate(key) }) else { return (nil, []) }
        let generation = store.indexGeneration.value
        try store.ensureActive()
        if store.indexGeneration.value != generation {
            // The folder was lost and the store opened its path anew: the key may be gone or elsewhere.
            guard let current = store.withIndex({ $0.locate(key) }) else { return (nil, []) }
            found = current
        }
        // One key, found once: no array, and the index removes it where it was found.
        let removed = try withUnsafePointer(to: Removal(key: key, record: found.record, location: found.location)) {
            try removeRecords(UnsafeBufferPointer(start: $0, count: 1), durable: durable)
        }
        store.client?.publish(.remove(keys: [key], reason: .removed))
        return removed
    }

    /// Empties the store at once: a new segment whose header supersedes every older one (its
    /// `floor`), with a `clear` record; the index is swapped for an empty one, and the old segments
    /// and value files are deleted off the queue (space is reclaimed after the call returns; a crash
    /// meanwhile leaves files that the next open removes), or before it returns after a write found
    /// the disk full (``SegmentLog/foundDiskFull``). When no new segment can be written (a full
    /// disk), the old files are deleted first instead (``deleteEverything(freeingSpace:)``).
    package func removeAll() throws {
        store.assertOnQueue()
        try store.checkWritable()
        try store.ensureActive()
        let diskWasFull = store.log.foundDiskFull // before the clear record's append says otherwise
        let retired = store.log.segments.values.sorted { $0.id < $1.id }
        do {
            try store.log.roll(floor: store.log.nextSegmentID)
        } catch where Self.isDiskFull(error) {
            let keys = store.client?.hasObservers == true ? store.keys : []
            try deleteEverything()
            store.client?.publish(.removeAll(keys: keys))
            return
        }
        // From here the new segment's header supersedes the old ones: the store is empty, whatever fails.
        var failure: (any Error)?
        do {
            try store.log.append { buffer, salt in SegmentFormat.appendClear(salt: salt, to: &buffer) }
            // The new segment (and its name) must be on stable storage before old segments go.
            try store.log.active?.sync()
            try store.log.folder.handle.sync()
        } catch {
            failure = error
        }
        let oldIndex = emptyIndex()
        // Listing a million keys takes a while: only for observers, who are told which keys went.
        let keys = store.client?.hasObservers == true ? oldIndex.keys : []
        try? store.log.folder.removeDirectory() // it names the old segments
        for segment in retired { store.log.segments[segment.id] = nil }
        store.log.publishStructure()
        let folder = store.log.folder.handle // not the folder the store may have opened anew by then
        let (retainer, shared) = (store.log.folder.retained, store.log.folder.shared)
        let discarded = Discarded(oldIndex)
        let deleteOldFiles: @Sendable () -> Void = {
            // Oldest first: should the new segment be lost (a power cut before it was flushed), what
            // remains is a later part of the history, where each key has its newest value or none.
            // (One a process following the store has not read yet stays until it has.)
            // On a full disk every file goes, kept ones too: the space must be free when the call returns.
            for segment in retired { if diskWasFull { segment.remove() } else { retainer.retire(segment, shared: shared) } }
            for (id, position) in discarded.files() {
                if diskWasFull { try? folder.remove(ValueFiles.name(of: id)) } else { retainer.retireValueFile(id, namedAt: position, folder: folder, shared: shared) }
            }
            if diskWasFull { retainer.removeUnneeded(in: folder, shared: shared, freeingSpace: true) }
            discarded.release()
        }
        if !store.sharing.mode.worksOutsideOperations || diskWasFull {
            // Inside the operation, holding the lock: a reader that holds it finds no work in progress.
            // And on a full disk: the space must be free when the call returns (the next write needs it).
            deleteOldFiles()
        } else {
            // A million entries take a while to list and free: not on the caller's path.
            DispatchQueue.global(qos: .utility).async(group: store.housekeeping, execute: deleteOldFiles)
        }
        store.client?.publish(.removeAll(keys: keys))
        if let failure { throw failure }
    }

    static func isDiskFull(_ error: any Error) -> Bool {
        FileIO.isErrno(error, .ENOSPC) || FileIO.isErrno(error, .EDQUOT)
    }

    /// Swaps the index for an empty one; returns the old one.
    private func emptyIndex() -> KeyDirectory {
        store.epoch += 1 // a compaction under way is discarded
        let oldIndex = store.withIndex { index in
            store.invalidateMemory(nil) // in the index's hold: see `sharedIndex`
            defer { index.replace(with: KeyDirectory(seed: store.log.folder.storeID)) }
            return index
        }
        store.totalSize = 0
        store.earliestExpiry = .infinity
        store.changesSinceDirectory += 1
        store.directoryBuilder = nil // its index is gone (it stops): a store filled again may start another
        store.log.dropPendingAccesses()
        return oldIndex
    }

    /// Empties the store by deleting its files, writing nothing first, so that it works on a full
    /// disk: the key directory, then the segments oldest first (what a crash partway leaves is a later
    /// part of the history: each key has its newest value or none, never an older one), then the
    /// value files; then a new segment, in the room just freed. If even that cannot be written, the
    /// next write starts it.
    ///
    /// `freeingSpace` false (removals emptied the store, which starts its files anew): a segment or value
    /// file a process following the store may still read stays until it has (``RetainedSegments``); those
    /// are always a later part of the history than the ones deleted.
    func deleteEverything(freeingSpace: Bool = true) throws {
        let oldIndex = emptyIndex()
        try? store.log.folder.removeDirectory()
        if freeingSpace { store.log.folder.retained.removeUnneeded(in: store.log.folder.handle, shared: nil, freeingSpace: true) }
        for segment in store.log.segments.values.sorted(by: { $0.id < $1.id }) {
            store.log.segments[segment.id] = nil
            if freeingSpace { segment.remove() } else { store.log.retire(segment) }
        }
        store.log.active = nil
        try? store.log.groupCommit.switchFile(to: nil)
        oldIndex.forEachValue { record in
            if freeingSpace, let id = record.fileID { store.log.values.remove(id) } else { store.log.valueFile(of: record)?.remove() }
        }
        if store.durable { try store.log.folder.handle.sync() }
        // The next segment supersedes whatever was deleted, also if it can only be made later.
        store.log.floor = store.log.nextSegmentID
        try? store.log.roll()
        store.log.publishStructure()
    }

    /// Removes every value that expired at or before `now`; returns their keys.
    @discardableResult
    package func removeExpired(now: Date) throws -> [String] {
        store.assertOnQueue()
        let cutoff = StoredTime.seconds(now)
        // Trimming calls this on every write of a full store: skip the scan while nothing can have expired.
        guard cutoff >= store.earliestExpiry else { return [] }
        try store.checkWritable()
        var expired: [String] = []
        var earliestRemaining = Double.infinity
        store.withIndex { index in
            for (key, record) in index.entries {
                if record.expiry <= cutoff { expired.append(key) } else { earliestRemaining = min(earliestRemaining, record.expiry) }
            }
        }
        try removeAndPublish(expired, reason: .expired)
        store.earliestExpiry = earliestRemaining
        return expired
    }

    /// Removes expired values, then least recently used ones, until at most `maxSize` bytes remain.
    package func trim(toSize maxSize: Int, now: Date) throws {
        store.assertOnQueue()
        guard store.totalSize > maxSize else { return }
        try store.checkWritable()
        store.applyMemoryHits(now: now)
        try removeExpired(now: now)
        var evicted: [String] = []
        var freed = 0
        let (totalSize, client) = (store.totalSize, store.client)
        store.withIndex { index in
            index.forEachOldestFirst { key, record in
                guard totalSize - freed > maxSize else { return false }
                if client?.isPinned(key) == true { return true } // the layers above's bookkeeping stays
                evicted.append(key)
                freed += record.size
                return true
            }
        }
        try removeAndPublish(evicted, reason: .evicted)
    }

    /// Drops `key` after its data proved damaged. Unlike ``remove(_:durable:)`` this never throws: the
    /// entry goes from the index even if its tombstone cannot be written (the damage stays detectable).
    package func drop(_ key: String) {
        guard store.record(forKey: key) != nil else { return }
        if store.writes { _ = try? removeKeys([key]) }
        if store.record(forKey: key) != nil {
            store.withIndex { index in
                store.invalidateMemory(key: key) // in the index's hold: see `sharedIndex`
                if let old = index.remove(key) { store.forget(old) }
            }
        }
        store.client?.publish(.remove(keys: [key], reason: .removed))
    }

    /// Removes `keys` and tells observers about them.
    private func removeAndPublish(_ keys: [String], reason: StoreEvent.RemovalReason) throws {
        guard !keys.isEmpty else { return }
        try removeKeys(keys)
        store.client?.publish(.remove(keys: keys, reason: reason))
    }

    /// Removes `keys` with one append of their tombstones, then from memory and the index (in one
    /// hold of its lock: a reader off the queue sees all of them removed or none), then deletes
    /// their value files — at once, or, for a `durable` removal, once its tombstones are on stable
    /// storage (returned to the caller, who waits for the group commit position returned). A store
    /// emptied this way deletes its segments (``deleteEverything(freeingSpace:)``): a full disk is freed without
    /// waiting for a compaction, which would need room to write.
    @discardableResult
    package func removeKeys(_ keys: [String], durable: Bool = false) throws -> (position: UInt64?, files: [ValueFileRef]) {
        store.assertOnQueue()
        try store.ensureActive()
        let removals = store.withIndex { index in
            keys.compactMap { key in index.peek(key).map { Removal(key: key, record: $0, location: nil) } }
        }
        return try removals.withUnsafeBufferPointer { try removeRecords($0, durable: durable) }
    }

    /// A key to remove, with its record as the index has it, and where, if the caller just found it
    /// there (``KeyDirectory/locate(_:)``).
    private struct Removal {
        var key: String
        var record: DiskRecord
        var location: KeyDirectory.Location?
    }

    /// ``removeKeys(_:durable:)`` of keys whose records the caller found in the index, on the queue
    /// since (a removal of one key looks it up once here, not again).
    private func removeRecords(_ removals: UnsafeBufferPointer<Removal>, durable: Bool) throws -> (position: UInt64?, files: [ValueFileRef]) {
        guard !removals.isEmpty else { return (nil, []) }
        var tombstoneBytes = 0
        let end: UInt64
        do {
            let length = removals.reduce(0) { $0 + SegmentFormat.removeLength(keyCount: $1.key.utf8.count) }
            end = try store.log.append(durable: durable, length: length) { out, salt in
                var last = 0
                for removal in removals {
                    var key = removal.key
                    last = key.withUTF8 { utf8 in
                        let length = SegmentFormat.removeLength(keyCount: utf8.count)
                        SegmentFormat.encodeRemove(key: UnsafeRawBufferPointer(utf8), salt: salt,
                                                   into: UnsafeMutableRawBufferPointer(rebasing: out[tombstoneBytes..<(tombstoneBytes + length)]))
                        return length
                    }
                    tombstoneBytes += last
                }
                return last
            }.end
        } catch where Self.isDiskFull(error) && removals.count == store.withIndex({ $0.count }) {
            // No room for the tombstones of the last entries (a full disk): delete the files instead.
            try deleteEverything()
            return (nil, [])
        }
        store.log.active?.deadBytes += tombstoneBytes
        let isEmpty = store.withIndex { index in
            // In the index's hold: see `sharedIndex`. One key (the common case) without an array.
            if removals.count == 1 { store.invalidateMemory(key: removals[0].key) } else { store.invalidateMemory(removals.map(\.key)) }
            for removal in removals {
                let old = if let location = removal.location {
                    index.remove(removal.key, at: location, hash: removal.record.keyHash)
                } else {
                    index.remove(removal.key, knownHash: removal.record.keyHash)
                }
                if let old { store.forget(old) }
            }
            return index.count == 0
        }
        store.changesSinceDirectory += 1
        let files = removals.compactMap { store.log.valueFile(of: $0.record) }
        if isEmpty, store.log.byteCounts.total >= DiskStore.emptyStoreResetMinimum {
            try? deleteEverything(freeingSpace: false)
        } else {
            store.compaction.startIfNeeded()
        }
        store.log.folderLoss.didAppend() // the quiet gap runs from the end of the removal, not of its append
        guard !durable else { return (end, files) }
        for file in files { file.remove() } // an orphan if this fails: the next open removes it
        return (end, [])
    }
}

/// An index that `removeAll()` emptied, listed and freed on another thread.
private final class Discarded: @unchecked Sendable {
    // @unchecked Sendable: the index is handed over once and only touched there.
    private var index: KeyDirectory?

    package init(_ index: KeyDirectory) {
        self.index = index
    }

    /// The value files its entries named, each with the position of the record that names it.
    func files() -> [(id: UInt64, position: (segment: UInt32, offset: Int))] {
        var files: [(id: UInt64, position: (segment: UInt32, offset: Int))] = []
        index?.forEachValue { record in if let id = record.fileID { files.append((id, (record.segment, Int(record.offset)))) } }
        return files
    }

    package func release() {
        index = nil
    }
}
