/// The index's listings: every entry, key or record, in no order or least recently used first.
extension KeyDirectory {
    /// Calls `body` with every live entry's reference and recency.
    private func forEachReference(_ body: (UInt64, Reference) -> Void) {
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                body(base.recency(at: slot), .slot(slot))
            }
        }
        for entry in overlay.entries { body(entry.recency, .key(entry.key)) }
    }

    func entry(_ reference: Reference) -> (key: String, record: DiskRecord)? {
        switch reference {
        case .slot(let slot):
            guard let base, let key = base.key(at: slot), let record = base.record(at: slot) else { return nil }
            return (key, record)
        case .key(let key):
            return overlay.position(of: key, hash: hash(key)).map { (key, overlay[$0].record) }
        }
    }

    func recency(of reference: Reference) -> UInt64? {
        switch reference {
        case .slot(let slot): isShadowed(slot) ? nil : base?.recency(at: slot)
        case .key(let key): overlay.position(of: key, hash: hash(key)).map { overlay[$0].recency }
        }
    }

    /// Every entry, in no particular order.
    package var entries: [(key: String, value: DiskRecord)] {
        var result: [(key: String, value: DiskRecord)] = []
        result.reserveCapacity(count)
        forEachReference { _, reference in
            if let (key, record) = entry(reference) { result.append((key, record)) }
        }
        return result
    }

    /// Every entry, least recently used first.
    package var entriesOldestFirst: [(key: String, value: DiskRecord)] {
        referencesByRecency().compactMap { entry($0.reference) }.map { ($0.key, $0.record) }
    }

    /// A live entry as a compaction's start takes it: where its record is, its key's hash, and what a copy
    /// of it carries over from the index (recency, last use, expiry). 48 bytes, against 80 for a record and
    /// its recency: the array of them is made in the store's turn, and its first touch was most of that.
    struct LiveRecord {
        var recency: UInt64
        var keyHash: UInt64
        var lastAccess: Double
        var expiry: Double
        var segment: UInt32
        var offset: UInt32
        var length: UInt32

        init(_ record: DiskRecord, recency: UInt64) {
            (self.recency, keyHash, lastAccess, expiry) = (recency, record.keyHash, record.lastAccess, record.expiry)
            (segment, offset, length) = (record.segment, record.offset, record.length)
        }

        /// The record this names, whose value (in the record, or a file it names) is `value`.
        func record(value: StoredValue) -> DiskRecord {
            DiskRecord(segment: segment, offset: offset, length: length, value: value, expiry: expiry, lastAccess: lastAccess,
                       keyHash: keyHash)
        }
    }

    /// Every live entry, in no particular order: what a compaction copies. Taken in the store's turn and
    /// under the index's lock, so it reads no key and sorts nothing (at a million entries that was a
    /// stall of every writer and every read off the queue); the copy sorts them off the queue and takes
    /// each key from its record (``CompactionCopy/compact(_:seed:victims:into:count:folder:store:segmentLimit:)``).
    func recordsForCompaction() -> [LiveRecord] {
        var all: [LiveRecord] = []
        all.reserveCapacity(count)
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                if let record = base.record(at: slot) { all.append(LiveRecord(record, recency: base.recency(at: slot))) }
            }
        }
        for position in 0..<overlay.count {
            all.append(LiveRecord(overlay[position].record, recency: overlay[position].recency))
        }
        return all
    }

    /// Every live entry's reference, least recently used first.
    func referencesByRecency() -> [(recency: UInt64, reference: Reference)] {
        var all: [(recency: UInt64, reference: Reference)] = []
        all.reserveCapacity(count)
        forEachReference { all.append(($0, $1)) }
        all.sort { $0.recency < $1.recency }
        return all
    }

    package var keys: [String] { keys { _ in true } }

    /// The keys that `isIncluded` accepts, in no particular order.
    package func keys(where isIncluded: (String) -> Bool) -> [String] {
        var result: [String] = []
        forEachReference { _, reference in
            switch reference {
            case .slot(let slot): if let key = base?.key(at: slot), isIncluded(key) { result.append(key) }
            case .key(let key): if isIncluded(key) { result.append(key) }
            }
        }
        return result
    }

    /// Calls `body` with every live record, in no particular order.
    package func forEachValue(_ body: (DiskRecord) -> Void) {
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                if let record = base.record(at: slot) { body(record) }
            }
        }
        for entry in overlay.entries { body(entry.record) }
    }

    /// The keys of the live entries whose records are at `positions` (segment, offset), found in the base by
    /// their hashes (`positions`' values) and among the entries written since it: without a pass over the base.
    package func keys(at positions: [UInt64: UInt64]) -> [UInt64: String] {
        var found: [UInt64: String] = [:]
        for entry in overlay.entries {
            let position = UInt64(entry.record.segment) << 32 | UInt64(entry.record.offset)
            if positions[position] != nil { found[position] = entry.key }
        }
        if let base {
            for (position, hash) in positions where found[position] == nil {
                if let slot = base.find(hash: hash, segment: UInt32(position >> 32), offset: UInt32(truncatingIfNeeded: position)),
                   !isShadowed(slot), let key = base.key(at: slot) {
                    found[position] = key
                }
            }
        }
        return found
    }

    /// The entries written or changed since the base, in no particular order (replay maps their positions).
    var overlayEntries: [(key: String, value: DiskRecord)] {
        overlay.entries.map { ($0.key, $0.record) }
    }
}
