import Testing
@testable import Stash
@_spi(StashLayers) @testable import StashEngine

/// `LRUIndex` (the LRU behind the memory layer and the disk index, Contract item 5) checked
/// against a plain array kept in recency order, over seeded random operation sequences.
@Suite("LRUIndex against a reference model")
struct LRUIndexTests {
    // MARK: Random sequences

    // Contract 5: the structure that orders eviction keeps exact least-recently-used order.
    @Test("random set/use/peek/remove/removeAll sequences match the reference model after every step",
          arguments: zip([0x5EED_0001, 0x5EED_0002, 0x5EED_0003, 0x5EED_0004, 0x5EED_0005, 0x5EED_0006] as [UInt64],
                         [1, 2, 3, 5, 8, 20]))
    func randomSequencesMatchModel(seed: UInt64, keyCount: Int) throws {
        var random = SeededGenerator(seed: seed)
        let keys = (0..<keyCount).map { "k\($0)" }
        var index = LRUIndex<Int>()
        var model = ReferenceLRU()
        var nextValue = 0

        for step in 0..<4000 {
            let key = keys[random.below(keyCount)]
            let roll = random.below(200)
            let operation: String
            switch roll {
            case 0:
                operation = "removeAll"
                index.removeAll()
                model.removeAll()
            case 1..<70:
                nextValue += 1
                operation = "set(\(key), \(nextValue))"
                let replaced = index.set(key, nextValue)
                try #require(replaced == model.set(key, nextValue), "step \(step): \(operation) returned the wrong old value")
            case 70..<110:
                operation = "use(\(key))"
                try #require(index.use(key) == model.use(key), "step \(step): \(operation)")
            case 110..<130:
                nextValue += 1
                let newValue = nextValue
                operation = "use(\(key)) { $0 = \(newValue) }"
                let found = index.use(key) { $0 = newValue }
                try #require(found == model.change(key, to: newValue), "step \(step): \(operation)")
            case 130..<150:
                operation = "peek(\(key))"
                try #require(index.peek(key) == model.peek(key), "step \(step): \(operation)")
            default:
                operation = "remove(\(key))"
                try #require(index.remove(key) == model.remove(key), "step \(step): \(operation)")
            }
            try Self.requireMatches(index, model, keys: keys, step: step, operation: operation, stopAfter: random.below(keyCount + 2))
        }
    }

    // MARK: Exhaustive small cases

    // Contract 5: removal fills the hole with the last node; every position of every small size keeps the order.
    @Test("removing any position from any permutation of up to 5 keys keeps the order of the rest")
    func removeEveryPositionOfSmallPermutations() throws {
        for size in 0...5 {
            let keys = (0..<size).map { "k\($0)" }
            for order in Self.permutations(of: keys) {
                for removed in keys {
                    var index = LRUIndex<Int>()
                    var model = ReferenceLRU()
                    // Insert in key order, then use in `order`, so insertion slots and recency differ.
                    for (value, key) in keys.enumerated() {
                        index.set(key, value)
                        _ = model.set(key, value)
                    }
                    for key in order {
                        _ = index.use(key)
                        _ = model.use(key)
                    }
                    try #require(index.remove(removed) == model.remove(removed))
                    try Self.requireMatches(index, model, keys: keys, step: size, operation: "remove(\(removed)) after \(order)",
                                            stopAfter: size / 2)
                    // The list must stay usable after the swap: append and reuse every key.
                    index.set(removed, 99)
                    _ = model.set(removed, 99)
                    for key in keys.reversed() {
                        _ = index.use(key)
                        _ = model.use(key)
                    }
                    try Self.requireMatches(index, model, keys: keys, step: size, operation: "reinsert(\(removed)) after \(order)",
                                            stopAfter: size)
                }
            }
        }
    }

    // Contract 5: an empty index has no oldest entry and iterates nothing.
    @Test("an empty index, and one emptied by removals or removeAll, reports nothing")
    func emptyIndex() throws {
        var index = LRUIndex<Int>()
        try Self.requireMatches(index, ReferenceLRU(), keys: ["a"], step: 0, operation: "init", stopAfter: 1)
        index.set("a", 1)
        index.set("b", 2)
        index.remove("a")
        index.remove("b")
        try Self.requireMatches(index, ReferenceLRU(), keys: ["a", "b"], step: 1, operation: "remove all by key", stopAfter: 1)
        index.set("a", 1)
        index.removeAll()
        try Self.requireMatches(index, ReferenceLRU(), keys: ["a"], step: 2, operation: "removeAll", stopAfter: 1)
        #expect(index.remove("a") == nil)
        #expect(index.use("a") == nil)
        #expect(!index.use("a") { $0 += 1 })
    }

    // MARK: Checking

    /// Requires every observable property of `index` to equal the model's.
    private static func requireMatches(_ index: LRUIndex<Int>, _ model: ReferenceLRU, keys: [String], step: Int,
                                       operation: String, stopAfter limit: Int,
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let context = { "step \(step), after \(operation); model: \(model.entries)" }
        #if DEBUG
        try #require(index.checkInvariants(), "\(context())", sourceLocation: sourceLocation)
        #endif
        try #require(index.count == model.entries.count, "\(context())", sourceLocation: sourceLocation)
        for key in keys {
            try #require(index.peek(key) == model.peek(key), "peek(\(key)): \(context())", sourceLocation: sourceLocation)
        }
        try #require(index.oldest?.key == model.entries.first?.key, "\(context())", sourceLocation: sourceLocation)
        try #require(index.oldest?.value == model.entries.first?.value, "\(context())", sourceLocation: sourceLocation)

        let ordered = index.entriesOldestFirst
        try #require(ordered.map(\.key) == model.entries.map(\.key), "entriesOldestFirst: \(context())", sourceLocation: sourceLocation)
        try #require(ordered.map(\.value) == model.entries.map(\.value), "entriesOldestFirst: \(context())", sourceLocation: sourceLocation)

        var visited: [(key: String, value: Int)] = []
        index.forEachOldestFirst { key, value in
            visited.append((key, value))
            return true
        }
        try #require(visited.map(\.key) == model.entries.map(\.key), "forEachOldestFirst: \(context())", sourceLocation: sourceLocation)
        try #require(visited.map(\.value) == model.entries.map(\.value), "forEachOldestFirst: \(context())", sourceLocation: sourceLocation)

        // Returning false stops the walk at once.
        var calls = 0
        var prefix: [String] = []
        index.forEachOldestFirst { key, _ in
            calls += 1
            guard prefix.count < limit else { return false }
            prefix.append(key)
            return true
        }
        let expectedPrefix = Array(model.entries.map(\.key).prefix(limit))
        try #require(prefix == expectedPrefix, "forEachOldestFirst stopping after \(limit): \(context())", sourceLocation: sourceLocation)
        try #require(calls == min(limit + 1, model.entries.count), "forEachOldestFirst kept calling after false: \(context())",
                     sourceLocation: sourceLocation)

        // The unordered views hold the same pairs, each key once.
        try #require(index.keys.sorted() == model.entries.map(\.key).sorted(), "\(context())", sourceLocation: sourceLocation)
        let unordered = index.entries.sorted { $0.key < $1.key }
        let expected = model.entries.sorted { $0.key < $1.key }
        try #require(unordered.map(\.key) == expected.map(\.key), "\(context())", sourceLocation: sourceLocation)
        try #require(unordered.map(\.value) == expected.map(\.value), "\(context())", sourceLocation: sourceLocation)
    }

    private static func permutations(of elements: [String]) -> [[String]] {
        guard let first = elements.first else { return [[]] }
        return permutations(of: Array(elements.dropFirst())).flatMap { rest in
            (0...rest.count).map { position in
                var permutation = rest
                permutation.insert(first, at: position)
                return permutation
            }
        }
    }
}

/// The obvious, slow LRU: an array of (key, value), least recently used first.
private struct ReferenceLRU {
    var entries: [(key: String, value: Int)] = []

    func peek(_ key: String) -> Int? {
        entries.first { $0.key == key }?.value
    }

    mutating func use(_ key: String) -> Int? {
        guard let position = entries.firstIndex(where: { $0.key == key }) else { return nil }
        let entry = entries.remove(at: position)
        entries.append(entry)
        return entry.value
    }

    /// The closure form of `use`: marks the key used and changes its value; false when absent.
    mutating func change(_ key: String, to value: Int) -> Bool {
        guard use(key) != nil else { return false }
        entries[entries.count - 1].value = value
        return true
    }

    mutating func set(_ key: String, _ value: Int) -> Int? {
        let old = remove(key)
        entries.append((key, value))
        return old
    }

    mutating func remove(_ key: String) -> Int? {
        guard let position = entries.firstIndex(where: { $0.key == key }) else { return nil }
        return entries.remove(at: position).value
    }

    mutating func removeAll() {
        entries.removeAll()
    }
}
