import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 5, memory part, through `Storage`: an entry's memory cost is its encoded size in
/// bytes (no user code), the memory limits hold after every write, and what memory evicts is
/// still read from disk.
@Suite("Storage memory cost and limits")
struct StorageMemoryCostTests {
    // Contract 5: the cost of an entry written through Storage is its encoded size in bytes.
    @Test("the memory cost of a Codable value is the size of its encoded JSON")
    func codableCostIsEncodedSize() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, memory: MemoryConfig(totalCostLimit: 1_000_000))
        let memory = storage.hybridStorage.memoryStorage
        let ann = User(name: "ann", age: 30)
        let bob = User(name: String(repeating: "b", count: 500), age: 7)

        try storage.setObject(ann, forKey: "ann")
        let annSize = try JSONEncoder().encode(ann).count
        #expect(memory.totalCost == annSize)
        #expect(memory.allKeys == ["ann"])

        try storage.setObject(bob, forKey: "bob")
        let bobSize = try JSONEncoder().encode(bob).count
        #expect(memory.totalCost == annSize + bobSize)
        #expect(memory.totalCost == storage.totalSize) // the same bytes the disk counts

        try storage.setObject(ann, forKey: "bob") // replacing replaces the cost
        #expect(memory.totalCost == 2 * annSize)
        try storage.removeObject(forKey: "ann")
        #expect(memory.totalCost == annSize)
    }

    // Contract 5: for raw Data the cost is exactly the byte count.
    @Test("the memory cost of Data is its byte count", arguments: [0, 1, 100, 4096])
    func dataCostIsByteCount(size: Int) throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(totalCostLimit: 10_000),
                                        transformer: TransformerFactory.forData())
        try storage.setObject(Data(repeating: 7, count: size), forKey: "k")
        #expect(storage.hybridStorage.memoryStorage.totalCost == size)
        #expect(storage.hybridStorage.memoryStorage.allKeys == ["k"])
    }

    // Contract 5: a value copied into memory from disk is priced by its size too.
    @Test("a value read from disk into memory costs its size in bytes")
    func diskHitCostIsSize() throws {
        let directory = TemporaryDirectory()
        let writer = try Storage<Data>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData())
        try writer.setObject(Data(count: 300), forKey: "k")
        // A second storage on the folder shares the disk engine but has a memory layer of its own.
        let reader = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(totalCostLimit: 1000),
                                       transformer: TransformerFactory.forData())
        #expect(reader.hybridStorage.memoryStorage.count == 0)
        #expect(try reader.object(forKey: "k").count == 300)
        #expect(reader.hybridStorage.memoryStorage.allKeys == ["k"])
        #expect(reader.hybridStorage.memoryStorage.totalCost == 300)
    }

    // Contract 5: totalCostLimit holds after every write; evicted values are still on disk.
    @Test("totalCostLimit holds after every write, and values evicted from memory are read from disk")
    func costLimitHoldsAndDiskServesEvicted() throws {
        let directory = TemporaryDirectory()
        let limit = 1000
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(totalCostLimit: limit),
                                        transformer: TransformerFactory.forData())
        let memory = storage.hybridStorage.memoryStorage
        var written: [String: Data] = [:]
        var recency: [String] = [] // keys, least recently used first, as the memory layer should see them
        var state: UInt64 = 0x5EED
        for index in 0..<40 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let size = 50 + Int(state >> 33) % 350
            let key = "k\(index)"
            let value = Data(repeating: UInt8(index), count: size)
            try storage.setObject(value, forKey: key)
            written[key] = value
            recency.append(key)

            #expect(memory.totalCost <= limit)
            #if DEBUG
            #expect(memory.cache.checkInvariants())
            #endif
            // Memory keeps the most recent suffix that fits, and each entry costs its size.
            var expected: [String] = []
            var cost = 0
            for key in recency.reversed() {
                guard cost + (written[key]?.count ?? 0) <= limit else { break }
                cost += written[key]?.count ?? 0
                expected.append(key)
            }
            #expect(Set(memory.allKeys) == Set(expected), "after writing \(key)")
            #expect(memory.totalCost == cost)
        }
        #expect(memory.count < written.count) // the test evicted something

        // Every value, in memory or not, is read back; a disk hit is copied back into memory within the limit.
        for (key, value) in written.sorted(by: { $0.key < $1.key }) {
            #expect(try storage.object(forKey: key) == value)
            #expect(memory.allKeys.contains(key))
            #expect(memory.totalCost <= limit)
        }
        #expect(Set(storage.allKeys) == Set(written.keys))
    }

    // Contract 5: countLimit holds after every write through Storage.
    @Test("countLimit holds after every write through Storage, and evicted values are read from disk",
          arguments: [1, 3])
    func countLimitHolds(limit: Int) throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: limit))
        let memory = storage.hybridStorage.memoryStorage
        for age in 0..<10 {
            try storage.setObject(User(name: "u", age: age), forKey: "k\(age)")
            #expect(memory.count == min(age + 1, limit))
            #expect(Set(memory.allKeys) == Set((max(0, age + 1 - limit)...age).map { "k\($0)" }))
        }
        #expect(storage.allKeys.count == 10)

        #expect(try storage.object(forKey: "k0").age == 0) // from disk
        #expect(memory.count == limit)
        #expect(memory.allKeys.contains("k0"))
        #expect(!memory.allKeys.contains("k\(10 - limit)")) // the least recently used made room
        for age in 0..<10 {
            #expect(try storage.object(forKey: "k\(age)").age == age)
            #expect(memory.count <= limit)
        }
    }

    // Contract 5: a read through Storage counts as use in memory.
    @Test("a memory hit through Storage counts as use for memory eviction")
    func memoryHitCountsAsUse() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: 2))
        let memory = storage.hybridStorage.memoryStorage
        try storage.setObject(User(name: "a", age: 1), forKey: "a")
        try storage.setObject(User(name: "b", age: 2), forKey: "b")
        #expect(try storage.object(forKey: "a").name == "a") // a memory hit; b is now least recent
        try storage.setObject(User(name: "c", age: 3), forKey: "c")
        #expect(Set(memory.allKeys) == ["a", "c"])
    }

    // Contract 5: a value too big for memory is still stored on disk and read from there.
    @Test("a value costlier than totalCostLimit is not kept in memory but is stored on disk")
    func tooBigForMemoryStaysOnDisk() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(totalCostLimit: 100),
                                        transformer: TransformerFactory.forData())
        let memory = storage.hybridStorage.memoryStorage
        let big = Data(repeating: 1, count: 101)
        try storage.setObject(big, forKey: "big")
        #expect(!memory.allKeys.contains("big"))
        #expect(memory.totalCost <= 100)
        #expect(try storage.object(forKey: "big") == big)
        #expect(!memory.allKeys.contains("big")) // a disk hit that cannot fit is not kept either
        #expect(storage.totalSize == 101)
    }
}
