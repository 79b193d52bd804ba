import CStashAtomics

/// A dictionary whose entries each carry a stamp of when they were last used, and that finds the
/// least recently used entry (the smallest stamp) for eviction: the memory layer's items.
///
/// Marking an entry used (``markUsed(_:stamp:)``) is one atomic store into a word of its own, not a
/// change of the structure, so readers that share the structure (``MemoryCache``'s slots) may do it
/// at the same time; everything else needs exclusive access. Entries live in dense arrays (a removal
/// moves the last entry into the hole); the stamps in a buffer beside them, at the same positions.
///
/// The least recently used entry comes from the *eviction order*: every key and its stamp, sorted
/// by stamp, made when needed and then consumed from its front. An entry it names whose stamp has
/// changed since (used or written again) or that is gone is skipped: anything used, written or added
/// after the order was made has a larger stamp than every entry in it (stamps only grow), so the
/// first entry whose stamp is still the one listed is the least recently used of all.
/// - Complexity: Lookup, ``markUsed(_:stamp:)``, ``set(_:_:stamp:)`` and ``remove(_:)`` O(1);
///   ``removeLeastRecentlyUsed()`` O(log n) amortized (an O(n log n) sort each time the order runs out).
struct StampedIndex<Value> {
    private(set) var positions: [String: Int32] = [:]
    private(set) var keys: [String] = []
    private(set) var values: [Value] = []
    /// `capacity` words, the first `count` the stamps of `values`; written with atomic stores.
    private(set) var stamps: UnsafeMutablePointer<UInt64>
    private var capacity: Int
    private var evictionOrder: [(key: String, stamp: UInt64)] = []
    private var evictionNext = 0

    init() {
        capacity = 16
        stamps = .allocate(capacity: capacity)
    }

    /// Frees the stamps' buffer; the index is unusable afterwards (its owner's `deinit`).
    mutating func deallocate() {
        stamps.deallocate()
        capacity = 0
    }

    var count: Int { values.count }

    /// The position of `key`'s entry, if any.
    @inline(__always)
    func position(of key: String) -> Int32? { positions[key] }

    /// Marks the entry at `position` used at `stamp`. Safe beside other readers doing the same.
    @inline(__always)
    func markUsed(_ position: Int32, stamp: UInt64) {
        Self.markUsed(position, stamp: stamp, in: stamps)
    }

    /// Marks the entry at `position` used at `stamp`, given the index's ``stamps``: what readers
    /// that share the index call, reading its fields through a pointer (`shared.pointee.items.stamps`).
    /// A method called on the shared index copies it for the call, retaining its dictionary and
    /// arrays: reference counts that every reading thread would then write.
    @inline(__always)
    static func markUsed(_ position: Int32, stamp: UInt64, in stamps: UnsafeMutablePointer<UInt64>) {
        stash_store_release_u64(stamps + Int(position), stamp)
    }

    /// The stamp of the entry at `position`.
    func stamp(at position: Int32) -> UInt64 {
        stash_load_acquire_u64(stamps + Int(position))
    }

    /// Sets the value for `key`, marked used at `stamp`; returns the value it replaced.
    @discardableResult
    mutating func set(_ key: String, _ value: Value, stamp: UInt64) -> Value? {
        if let position = positions[key] {
            let old = values[Int(position)]
            values[Int(position)] = value
            markUsed(position, stamp: stamp)
            return old
        }
        if values.count == capacity { grow() }
        let position = Int32(values.count)
        positions[key] = position
        keys.append(key)
        values.append(value)
        markUsed(position, stamp: stamp)
        return nil
    }

    private mutating func grow() {
        let larger = UnsafeMutablePointer<UInt64>.allocate(capacity: capacity * 2)
        larger.update(from: stamps, count: values.count)
        stamps.deallocate()
        stamps = larger
        capacity *= 2
    }

    /// Removes `key` and returns its value.
    @discardableResult
    mutating func remove(_ key: String) -> Value? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        let last = Int32(values.count - 1)
        let value: Value
        if position != last {
            // Fill the hole with the last entry so the arrays stay dense.
            value = values[Int(position)]
            values[Int(position)] = values.removeLast()
            keys[Int(position)] = keys.removeLast()
            markUsed(position, stamp: stamp(at: last))
            positions[keys[Int(position)]] = position
        } else {
            value = values.removeLast()
            keys.removeLast()
        }
        return value
    }

    /// Removes every entry.
    mutating func removeAll() {
        positions.removeAll()
        keys.removeAll()
        values.removeAll()
        evictionOrder.removeAll()
        evictionNext = 0
    }

    /// Removes the entry with the smallest stamp and returns its key and value; nil when empty.
    mutating func removeLeastRecentlyUsed() -> (key: String, value: Value)? {
        guard !values.isEmpty else { return nil }
        while true {
            if evictionNext == evictionOrder.count { makeEvictionOrder() }
            let (key, listed) = evictionOrder[evictionNext]
            evictionNext += 1
            guard let position = positions[key], stamp(at: position) == listed else { continue }
            return remove(key).map { (key, $0) }
        }
    }

    private mutating func makeEvictionOrder() {
        evictionOrder.removeAll(keepingCapacity: true)
        evictionOrder.reserveCapacity(keys.count)
        for (position, key) in keys.enumerated() { evictionOrder.append((key, stamp(at: Int32(position)))) }
        evictionOrder.sort { $0.stamp < $1.stamp }
        evictionNext = 0
    }

    #if DEBUG
    /// Checks the arrays against the dictionary; for tests.
    func checkInvariants() -> Bool {
        positions.count == keys.count && keys.count == values.count && values.count <= capacity
            && keys.indices.allSatisfy { positions[keys[$0]] == Int32($0) }
    }
    #endif
}
