import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A write's memory copy: the writer's memory layer takes the new value as the index changes, every
/// other memory layer on the folder drops its old copy, and what the write's own trim evicts is not
/// left in memory (Contract items 5 and 11).
@Suite("A write's memory copy")
struct WriteMemoryCopyTests {
    private func makeStorage(_ directory: TemporaryDirectory, maxSize: Int = 0, clock: TestClock) throws -> Storage<Data> {
        try Storage<Data>(diskConfig: directory.diskConfig(maxSize: maxSize), transformer: TransformerFactory.forData(),
                          now: clock.function)
    }

    // Contract 5: expired values go first when a write passes maxSize, the written one too; memory
    // never holds what disk lost.
    @Test("a value the write's own trim evicts (written already expired) is in neither memory nor disk")
    func trimmedAtOnceLeavesNoMemoryCopy() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeStorage(directory, maxSize: 1_000, clock: clock)
        try storage.setObject(Data(repeating: 1, count: 600), forKey: "kept")
        try storage.setObject(Data(repeating: 2, count: 600), forKey: "stale", expiry: .date(clock.now.addingTimeInterval(-1)))
        #expect(storage.allKeys == ["kept"])
        #expect(!storage.hybridStorage.memoryStorage.allKeys.contains("stale"))
        #expect(throws: StorageError.notFound(key: "stale")) { try storage.entry(forKey: "stale") }
        #expect(try storage.object(forKey: "kept") == Data(repeating: 1, count: 600))
    }

    // Contract 11: two storages on one folder share its engine, each with a memory layer of its own.
    @Test("a write replaces the writer's memory copy and drops every other storage's copy of the key")
    func otherMemoryLayersDropTheirCopy() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let writer = try makeStorage(directory, clock: clock)
        let other = try makeStorage(directory, clock: clock)
        try writer.setObject(Data([1]), forKey: "k")
        #expect(try other.object(forKey: "k") == Data([1])) // now in the other's memory too
        #expect(other.hybridStorage.memoryStorage.allKeys == ["k"])

        try writer.setObject(Data([2, 2]), forKey: "k")
        #expect(other.hybridStorage.memoryStorage.allKeys.isEmpty)
        #expect(writer.hybridStorage.memoryStorage.allKeys == ["k"])
        #expect(writer.hybridStorage.memoryStorage.totalCost == 2)
        #expect(try other.object(forKey: "k") == Data([2, 2]))
        #expect(try writer.object(forKey: "k") == Data([2, 2]))
    }

    // Contract 9 (`Entry.filePath`): the memory copy of a value kept in a file of its own names it.
    @Test("the memory copy of a value written to a file of its own names that file")
    func memoryCopyNamesTheValueFile() throws {
        let directory = TemporaryDirectory()
        var config = directory.diskConfig()
        config.storesValuesAsFiles = true
        let storage = try Storage<Data>(diskConfig: config, transformer: TransformerFactory.forData())
        try storage.setObject(Data([7, 7, 7]), forKey: "k")
        let path = try #require(try storage.entry(forKey: "k").filePath)
        #expect(FileManager.default.contents(atPath: path) == Data([7, 7, 7]))
        #expect(storage.hybridStorage.memoryStorage.allKeys == ["k"]) // the entry came from memory
    }
}
