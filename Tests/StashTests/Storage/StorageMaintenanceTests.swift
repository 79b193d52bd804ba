import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `Storage.trim(toSize:)`, `Storage.entryInfos` and the asynchronous `allKeys` and `trim`: looking into
/// and shrinking a whole store through the facade, with memory in front of disk.
@Suite("Storage maintenance")
struct StorageMaintenanceTests {
    /// A `Storage<Data>` in `directory`, on `clock`.
    private func makeStorage(_ directory: TemporaryDirectory, clock: TestClock, valuesAsFiles: Bool = false) throws -> Storage<Data> {
        var config = directory.diskConfig()
        config.storesValuesAsFiles = valuesAsFiles
        return try Storage<Data>(diskConfig: config, transformer: TransformerFactory.forData(), now: clock.function)
    }

    /// Writes `a`, `b`, `c` (10 bytes each, one second apart), an expired `old`, then reads `a` from memory.
    private func fill(_ storage: Storage<Data>, clock: TestClock) throws {
        try storage.setObject(Data(repeating: 0, count: 10), forKey: "old", expiry: .seconds(1))
        for key in ["a", "b", "c"] {
            clock.advance(by: 1)
            try storage.setObject(Data(repeating: 1, count: 10), forKey: key)
        }
        clock.advance(by: 1)
        _ = try storage.object(forKey: "a") // a memory hit: "a" is now the most recently used
    }

    @Test("trim(toSize:) removes expired values first, then the least recently used, memory hits counting as use")
    func trimRemovesExpiredThenLeastRecentlyUsed() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeStorage(directory, clock: clock)
        try fill(storage, clock: clock)

        try storage.trim(toSize: 20)
        #expect(Set(storage.allKeys) == ["c", "a"])
        #expect(storage.totalSize == 20)
        // Memory dropped its copies too: the facade does not serve what disk lost.
        #expect((storageError { _ = try storage.object(forKey: "b") })?.isNotFound == true)
        #expect((storageError { _ = try storage.entry(forKey: "old") })?.isNotFound == true)
        #expect(try storage.object(forKey: "a") == Data(repeating: 1, count: 10))

        try storage.trim(toSize: 0)
        #expect(storage.allKeys.isEmpty)
        #expect((storageError { _ = try storage.object(forKey: "a") })?.isNotFound == true)
    }

    // Contract 9: a value in a file of its own has its path; a packed one has none.
    @Test("entryInfos lists every value least recently used first, with size, expiry, last access and its file",
          arguments: [true, false])
    func entryInfosDescribeTheStore(valuesAsFiles: Bool) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeStorage(directory, clock: clock, valuesAsFiles: valuesAsFiles)
        let start = clock.now
        try fill(storage, clock: clock)

        let infos = storage.entryInfos
        #expect(infos.map(\.key) == ["old", "b", "c", "a"])
        #expect(infos.allSatisfy { $0.size == 10 })
        let old = try #require(infos.first)
        #expect(old.expiry == .date(start.addingTimeInterval(1)))
        #expect(old.isExpired(at: clock.now))
        #expect(infos.dropFirst().allSatisfy { !$0.isExpired(at: clock.now) })
        #expect(infos.last?.lastAccess == clock.now) // the memory hit
        for info in infos {
            if valuesAsFiles {
                #expect(FileManager.default.contents(atPath: try #require(info.filePath)) == (try storage.entry(forKey: info.key).object))
            } else {
                #expect(info.filePath == nil, "a packed value has no file")
            }
        }
    }

    @Test("async allKeys and trim run in order with the writes submitted before them")
    func asyncAllKeysAndTrim() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeStorage(directory, clock: clock)
        for key in ["x", "y", "z"] {
            clock.advance(by: 1)
            try await storage.async.setObject(Data(repeating: 2, count: 10), forKey: key)
        }
        #expect(Set(await storage.async.allKeys()) == ["x", "y", "z"])

        try await storage.async.trim(toSize: 10)
        #expect(await storage.async.allKeys() == ["z"])

        let keys: [String] = try await withCheckedThrowingContinuation { continuation in
            storage.async.trim(toSize: 0) { result in
                guard case .success = result else { return continuation.resume(with: result.map { [] }) }
                storage.async.allKeys { continuation.resume(with: $0) } // from a completion: no deadlock
            }
        }
        #expect(keys.isEmpty)
    }
}
