/// A dictionary that also keeps its keys in least-recently-used order.
///
/// Nodes live in one dense array linked by `Int32` indices (removal swaps the last node into the
/// hole), so every operation is O(1) and an entry costs a few words beside its key and value.
/// The version-1 upgrade uses it; the disk index is the `KeyDirectory`, and the memory layer, whose hits
/// run on several threads at once, a `StampedIndex` (a hit here reorders the list, a write every reader
/// would share).
///
/// `@inlinable`, so that the memory layer, in another module, ran it specialised for its items:
/// unspecialised, each operation on the generic `Node` went through runtime metadata and value
/// witnesses, ~4,000 instructions for one `remove`, and the memory layer's work was about a third
/// of an `update` (Docs/Benchmarks.md, "Update and transactions"). Public only to importers of the
/// `StashLayers` SPI (Stash's own layers): the compiler serialises the bodies of `@inlinable`
/// public declarations for other modules, not those of `package` ones.
@_spi(StashLayers)
public struct LRUIndex<Value> {
    @usableFromInline
    struct Node {
        @usableFromInline var key: String
        @usableFromInline var value: Value
        @usableFromInline var newer: Int32 // toward the most recent end; -1 at the head
        @usableFromInline var older: Int32 // toward the least recent end; -1 at the tail

        @inlinable
        init(key: String, value: Value, newer: Int32, older: Int32) {
            (self.key, self.value, self.newer, self.older) = (key, value, newer, older)
        }
    }

    @usableFromInline var positions: [String: Int32] = [:]
    @usableFromInline var nodes: [Node] = []
    @usableFromInline var mostRecent: Int32 = -1
    @usableFromInline var leastRecent: Int32 = -1

    /// An empty index.
    @inlinable
    public init() {}

    /// The number of entries.
    @inlinable
    public var count: Int { nodes.count }

    /// The value for `key`, without changing its recency.
    func peek(_ key: String) -> Value? {
        guard let position = positions[key] else { return nil }
        return nodes[Int(position)].value
    }

    /// The value for `key`, marking it the most recently used.
    @inlinable
    public mutating func use(_ key: String) -> Value? {
        guard let position = positions[key] else { return nil }
        moveToFront(position)
        return nodes[Int(position)].value
    }

    /// Reads the value for `key` in place (no copy of it), marking it the most recently used;
    /// nil if absent.
    @inlinable
    public mutating func use<Result>(_ key: String, reading body: (borrowing Value) -> Result) -> Result? {
        guard let position = positions[key] else { return nil }
        moveToFront(position)
        return body(nodes[Int(position)].value)
    }

    /// Changes the value for `key` in place, marking it the most recently used. Returns false if absent.
    @discardableResult
    @inlinable
    public mutating func use(_ key: String, _ change: (inout Value) -> Void) -> Bool {
        guard let position = positions[key] else { return false }
        moveToFront(position)
        change(&nodes[Int(position)].value)
        return true
    }

    /// Sets the value for `key` and marks it the most recently used; returns the value it replaced.
    @discardableResult
    @inlinable
    public mutating func set(_ key: String, _ value: Value) -> Value? {
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
    @inlinable
    static func claim(_ slot: inout Int32, _ next: Int32) -> Int32 {
        if slot < 0 { slot = next }
        return slot
    }

    /// Removes `key` and returns its value.
    @discardableResult
    @inlinable
    public mutating func remove(_ key: String) -> Value? {
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
    @inlinable
    public mutating func removeAll() {
        positions.removeAll()
        nodes.removeAll()
        mostRecent = -1
        leastRecent = -1
    }

    /// The least recently used entry.
    @inlinable
    public var oldest: (key: String, value: Value)? {
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
    @inlinable
    public var entriesOldestFirst: [(key: String, value: Value)] {
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
    @inlinable
    public var keys: [String] { nodes.map(\.key) }

    /// The keys that `isIncluded` accepts, in no particular order, copying no other key out.
    @inlinable
    public func keys(where isIncluded: (String) -> Bool) -> [String] {
        var result: [String] = []
        for index in nodes.indices where isIncluded(nodes[index].key) { result.append(nodes[index].key) }
        return result
    }

    /// Every entry, in no particular order.
    @inlinable
    public var entries: [(key: String, value: Value)] { nodes.map { ($0.key, $0.value) } }

    /// Links only: reading the whole node would copy (retain and release) its key and value.
    @inlinable
    mutating func unlink(_ position: Int32) {
        let (newer, older) = (nodes[Int(position)].newer, nodes[Int(position)].older)
        if newer >= 0 { nodes[Int(newer)].older = older } else { mostRecent = older }
        if older >= 0 { nodes[Int(older)].newer = newer } else { leastRecent = newer }
    }

    @inlinable
    mutating func moveToFront(_ position: Int32) {
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
    @inlinable
    public func checkInvariants() -> Bool {
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
