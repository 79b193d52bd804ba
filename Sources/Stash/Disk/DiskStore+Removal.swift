import Foundation

extension DiskStore {
    /// Removes `key`'s value, if any; returns the group commit position a durable caller waits for.
    @discardableResult
    func remove(_ key: String, durable: Bool = false) throws -> UInt64? {
        assertOnQueue()
        try checkWritable()
        guard record(forKey: key) != nil else { return nil }
        let end = try removeKeys([key], durable: durable)
        observers?.publish(.remove(keys: [key], reason: .removed))
        return end
    }

    /// Empties the store at once: a `clear` record starts a new segment, the index is swapped for an
    /// empty one, and the old segments and value files are deleted off the queue (space is reclaimed
    /// after the call returns; a crash meanwhile leaves files that the next open removes).
    func removeAll() throws {
        assertOnQueue()
        try checkWritable()
        try ensureActive()
        let retired = Array(segments.values)
        try roll()
        try append { buffer, salt in SegmentFormat.appendClear(salt: salt, to: &buffer) }
        // The clear record (and the new segment's name) must be on stable storage before old
        // segments go: a power cut could otherwise keep a mix of old segments without it.
        try active?.sync()
        try FileIO.syncDirectory(directory)
        epoch += 1 // a compaction under way is discarded
        invalidateMemory(nil) // before the index: see `sharedIndex`
        let oldIndex = withIndex { index in
            defer { index = LRUIndex() }
            return index
        }
        // Listing a million keys takes a while: only for observers, who are told which keys went.
        let keys = observers?.hasObservers == true ? oldIndex.keys : []
        totalSize = 0
        earliestExpiry = .infinity
        changesSinceSnapshot += 1
        try? FileIO.remove(directory + "/" + StoreFolder.snapshotName) // it names the old segments
        for segment in retired { segments[segment.id] = nil }
        let values = values
        let paths = retired.map(\.path)
        let discarded = Discarded(oldIndex)
        DispatchQueue.global(qos: .utility).async {
            for path in paths { try? FileIO.remove(path) }
            // A million entries take a while to list and free: not on the caller's path.
            for id in discarded.fileIDs() { values.remove(id) }
            discarded.release()
        }
        observers?.publish(.removeAll(keys: keys))
    }

    /// Removes every value that expired at or before `now`; returns their keys.
    @discardableResult
    func removeExpired(now: Date) throws -> [String] {
        assertOnQueue()
        let cutoff = now.timeIntervalSince1970
        // Trimming calls this on every write of a full store: skip the scan while nothing can have expired.
        guard cutoff >= earliestExpiry else { return [] }
        try checkWritable()
        var expired: [String] = []
        var earliestRemaining = Double.infinity
        withIndex { index in
            for (key, record) in index.entries {
                if record.expiry <= cutoff { expired.append(key) } else { earliestRemaining = min(earliestRemaining, record.expiry) }
            }
        }
        try removeAndPublish(expired, reason: .expired)
        earliestExpiry = earliestRemaining
        return expired
    }

    /// Removes expired values, then least recently used ones, until at most `maxSize` bytes remain.
    func trim(toSize maxSize: Int, now: Date) throws {
        assertOnQueue()
        guard totalSize > maxSize else { return }
        try checkWritable()
        applyMemoryHits(now: now)
        try removeExpired(now: now)
        var evicted: [String] = []
        var freed = 0
        let totalSize = totalSize
        withIndex { index in
            index.forEachOldestFirst { key, record in
                guard totalSize - freed > maxSize else { return false }
                evicted.append(key)
                freed += record.size
                return true
            }
        }
        try removeAndPublish(evicted, reason: .evicted)
    }

    /// Drops `key` after its data proved damaged. Unlike ``remove(_:)`` this never throws: the
    /// entry goes from the index even if its tombstone cannot be written (the damage stays detectable).
    func drop(_ key: String) {
        guard record(forKey: key) != nil else { return }
        if !readOnly { _ = try? removeKeys([key]) }
        if record(forKey: key) != nil {
            invalidateMemory([key])
            withIndex { index in
                if let old = index.remove(key) { forget(old) }
            }
        }
        observers?.publish(.remove(keys: [key], reason: .removed))
    }

    /// Removes `keys` and tells observers about them.
    private func removeAndPublish(_ keys: [String], reason: StoreEvent.RemovalReason) throws {
        guard !keys.isEmpty else { return }
        try removeKeys(keys)
        observers?.publish(.remove(keys: keys, reason: reason))
    }

    /// Removes `keys` with one append of their tombstones, then from memory and the index (in one
    /// hold of its lock: a reader off the queue sees all of them removed or none), then deletes
    /// their value files. Returns the group commit position after the tombstones.
    @discardableResult
    func removeKeys(_ keys: [String], durable: Bool = false) throws -> UInt64? {
        assertOnQueue()
        try ensureActive()
        let records = withIndex { index in keys.compactMap { key in index.peek(key).map { (key, $0) } } }
        guard !records.isEmpty else { return nil }
        var tombstoneBytes = 0
        let end = try append(durable: durable) { buffer, salt in
            var last = 0
            for (key, _) in records {
                last = SegmentFormat.appendRemove(key: key, salt: salt, to: &buffer)
                tombstoneBytes += last
            }
            return last
        }.end
        active?.deadBytes += tombstoneBytes
        invalidateMemory(keys) // before the index: see `sharedIndex`
        withIndex { index in
            for (key, _) in records {
                if let old = index.remove(key) { forget(old) }
            }
        }
        changesSinceSnapshot += 1
        for (_, record) in records {
            if let id = record.fileID { values.remove(id) } // an orphan if this fails: the next open removes it
        }
        startCompactionIfNeeded()
        return end
    }

    // MARK: Memory layers

    /// Attaches a memory layer, which then never holds a key the disk no longer has.
    func attach(_ cache: MemoryCache) {
        memoryCaches.removeAll { $0.cache == nil || $0.cache === cache }
        memoryCaches.append(WeakMemoryCache(cache: cache))
        cache.trackHits()
    }

    /// Counts memory hits as use, like disk reads (recorded, so the order survives a restart):
    /// a value that is hot in memory must not be the first evicted from disk.
    func applyMemoryHits(now: Date) {
        for weak in memoryCaches {
            if let cache = weak.cache { recordHits(of: cache, now: now) }
        }
    }

    /// Records `cache`'s pending memory hits as use at `now` (also when a storage is released).
    func recordHits(of cache: MemoryCache, now: Date) {
        let time = now.timeIntervalSince1970
        let hits = cache.takeRecentHits()
        guard !hits.isEmpty else { return }
        let used = withIndex { index in
            hits.compactMap { key -> DiskRecord? in
                index.use(key, { $0.lastAccess = time }) ? index.peek(key) : nil
            }
        }
        for record in used { noteAccess(record, time: time) }
    }

    func invalidateMemory(_ keys: [String]?) {
        for weak in memoryCaches {
            guard let cache = weak.cache else { continue }
            if let keys { cache.remove(keys) } else { cache.removeAll() }
        }
    }
}

/// An index that `removeAll()` emptied, listed and freed on another thread.
private final class Discarded: @unchecked Sendable {
    // @unchecked Sendable: the index is handed over once and only touched there.
    private var index: LRUIndex<DiskRecord>?

    init(_ index: LRUIndex<DiskRecord>) {
        self.index = index
    }

    /// The value files its entries named.
    func fileIDs() -> [UInt64] {
        index?.entries.compactMap { $0.value.fileID } ?? []
    }

    func release() {
        index = nil
    }
}
