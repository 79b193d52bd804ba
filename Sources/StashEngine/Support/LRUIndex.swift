/// A dictionary that also keeps its keys in least-recently-used order.
///
/// Nodes live in one dense array linked by `Int32` indices (removal swaps the last node into the
/// hole), so every operation is O(1) and an entry costs a few words beside its key and value.
/// The memory layer uses it (and the version-1 upgrade); the disk index is the `KeyDirectory`.
package struct LRUIndex<Value> {
    private struct Node {
        package var key: String
        package var value: Value
        package var newer: Int32 // toward the most recent end; -1 at the head
        package var older: Int32 // toward the least recent end; -1 at the tail
    }

    private var positions: [String: Int32] = [:]
    private var nodes: [Node] = []
    private var mostRecent: Int32 = -1
    private var leastRecent: Int32 = -1

    package init() {}

    /// The number of entries.
    package var count: Int { nodes.count }

    /// The value for `key`, without changing its recency.
    func peek(_ key: String) -> Value? {
        guard let position = positions[key] else { return nil }
        return nodes[Int(position)].value
    }

    /// The value for `key`, marking it the most recently used.
    package mutating func use(_ key: String) -> Value? {
        guard let position = positions[key] else { return nil }
        moveToFront(position)
        return nodes[Int(position)].value
    }

    /// Reads the value for `key` in place (no copy of it), marking it the most recently used;
    /// nil if absent.
    package mutating func use<Result>(_ key: String, reading body: (borrowing Value) -> Result) -> Result? {
        guard let position = positions[key] else { return nil }
        moveToFront(position)
        return body(nodes[Int(position)].value)
    }

    /// Changes the value for `key` in place, marking it the most recently used. Returns false if absent.
    @discardableResult
    package mutating func use(_ key: String, _ change: (inout Value) -> Void) -> Bool {
        guard let position = positions[key] else { return false }
        moveToFront(position)
        change(&nodes[Int(position)].value)
        return true
    }

    /// Sets the value for `key` and marks it the most recently used; returns the value it replaced.
    @discardableResult
    package mutating func set(_ key: String, _ value: Value) -> Value? {
        // One hash and lookup for both cases: a new key gets the next position in the same access.
        let next = Int32(nodes.count)
        let position = Self.claim(&positions[key, default: -1], next)
        if position != next {
            let old = nodes[Int(position)].value
            nodes[Int(position)].value = value
            moveToFront(position)
            return old
        }
        nodes.append(Node(key: key, value: value, newer: -1, older: mostRecent))
        if mostRecent >= 0 { nodes[Int(mostRecent)].newer = position }
        mostRecent = position
        if leastRecent < 0 { leastRecent = position }
        return nil
    }

    /// The position in `slot`, or `next` stored there if the slot is new (holds -1).
    private static func claim(_ slot: inout Int32, _ next: Int32) -> Int32 {
        if slot < 0 { slot = next }
        return slot
    }

    /// Removes `key` and returns its value.
    @discardableResult
    package mutating func remove(_ key: String) -> Value? {
        guard let position = positions.removeValue(forKey: key) else { return nil }
        unlink(position)
        let value = nodes[Int(position)].value
        let last = Int32(nodes.count - 1)
        if position != last {
            // Fill the hole with the last node so the array stays dense.
            let moved = nodes[Int(last)]
            nodes[Int(position)] = moved
            if moved.newer >= 0 { nodes[Int(moved.newer)].older = position } else { mostRecent = position }
            if moved.older >= 0 { nodes[Int(moved.older)].newer = position } else { leastRecent = position }
            positions[moved.key] = position
        }
        nodes.removeLast()
        return value
    }

    /// Removes every entry.
    package mutating func removeAll() {
        positions.removeAll()
        nodes.removeAll()
        mostRecent = -1
        leastRecent = -1
    }

    /// The least recently used entry.
    package var oldest: (key: String, value: Value)? {
        leastRecent < 0 ? nil : (nodes[Int(leastRecent)].key, nodes[Int(leastRecent)].value)
    }

    /// Calls `body` for entries from the least recently used on, until it returns false.
    func forEachOldestFirst(_ body: (String, Value) -> Bool) {
        var position = leastRecent
        while position >= 0 {
            guard body(nodes[Int(position)].key, nodes[Int(position)].value) else { return }
            position = nodes[Int(position)].newer
        }
    }

    /// Every entry, least recently used first.
    package var entriesOldestFirst: [(key: String, value: Value)] {
        var result: [(key: String, value: Value)] = []
        result.reserveCapacity(nodes.count)
        var position = leastRecent
        while position >= 0 {
            result.append((nodes[Int(position)].key, nodes[Int(position)].value))
            position = nodes[Int(position)].newer
        }
        return result
    }

    /// Every key, in no particular order.
    package var keys: [String] { nodes.map(\.key) }

    /// The keys that `isIncluded` accepts, in no particular order, copying no other key out.
    package func keys(where isIncluded: (String) -> Bool) -> [String] {
        var result: [String] = []
        for index in nodes.indices where isIncluded(nodes[index].key) { result.append(nodes[index].key) }
        return result
    }

    /// Every entry, in no particular order.
    package var entries: [(key: String, value: Value)] { nodes.map { ($0.key, $0.value) } }

    /// Links only: reading the whole node would copy (retain and release) its key and value.
    private mutating func unlink(_ position: Int32) {
        let (newer, older) = (nodes[Int(position)].newer, nodes[Int(position)].older)
        if newer >= 0 { nodes[Int(newer)].older = older } else { mostRecent = older }
        if older >= 0 { nodes[Int(older)].newer = newer } else { leastRecent = newer }
    }

    private mutating func moveToFront(_ position: Int32) {
        guard position != mostRecent else { return }
        unlink(position)
        nodes[Int(position)].older = mostRecent
        nodes[Int(position)].newer = -1
        if mostRecent >= 0 { nodes[Int(mostRecent)].newer = position }
        mostRecent = position
        if leastRecent < 0 { leastRecent = position }
    }

    #if DEBUG
    /// Checks the links against the dictionary; for tests.
    package func checkInvariants() -> Bool {
        var seen = 0
        var position = leastRecent
        var previous: Int32 = -1
        while position >= 0 {
            let node = nodes[Int(position)]
            guard node.older == previous, positions[node.key] == position else { return false }
            previous = position
            position = node.newer
            seen += 1
        }
        return seen == nodes.count && positions.count == nodes.count && previous == mostRecent
    }
    #endif
}
