import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 8 (issue #10 item 1): canonically equivalent spellings of a key are one key — in
/// memory, on disk, after a reopen, after compaction and for removal — in two scripts: Latin with a
/// combining mark, and Hangul (precomposed syllables vs conjoining jamo).
@Suite("Canonically equivalent keys", .serialized)
struct CanonicalKeyTests {
    /// (spelling written, equivalent spelling read): é vs e + U+0301; 한글 precomposed vs jamo.
    static let pairs: [(String, String)] = [
        ("caf\u{E9}", "cafe\u{301}"),
        ("\u{D55C}\u{AE00}", "\u{1112}\u{1161}\u{11AB}\u{1100}\u{1173}\u{11AF}"),
    ]

    @Test("memory: the other spelling reads, overwrites and removes the same entry", arguments: [0, 1])
    func memory(pair: Int) throws {
        let (written, other) = Self.pairs[pair]
        #expect(written.unicodeScalars.count != other.unicodeScalars.count && written == other)
        let memory = MemoryStorage<Data>(config: MemoryConfig())
        try memory.setObject(Data("1".utf8), forKey: written)
        #expect(try memory.object(forKey: other) == Data("1".utf8))
        try memory.setObject(Data("2".utf8), forKey: other)
        #expect(memory.allKeys.count == 1)
        #expect(try memory.object(forKey: written) == Data("2".utf8))
        memory.removeObject(forKey: other)
        #expect(memory.allKeys.isEmpty)
    }

    @Test("disk: either spelling reads, overwrites and removes one entry, also after a reopen", arguments: [0, 1])
    func disk(pair: Int) throws {
        let (written, other) = Self.pairs[pair]
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        do {
            let disk = try openDataStore(store)
            try disk.setObject(Data("1".utf8), forKey: written)
            #expect(try disk.object(forKey: other) == Data("1".utf8))
            #expect(disk.existsObject(forKey: other))
            try disk.setObject(Data("2".utf8), forKey: other)
            #expect(disk.allKeys.count == 1)
        }
        do {
            let disk = try openDataStore(store)
            #expect(disk.allKeys.count == 1)
            #expect(try disk.object(forKey: written) == Data("2".utf8))
            #expect(try disk.object(forKey: other) == Data("2".utf8))
            #expect(disk.recoveryIssues.isEmpty)
            try disk.removeObject(forKey: written)
        }
        let disk = try openDataStore(store)
        #expect(disk.allKeys.isEmpty)
        #expect(storageError { _ = try disk.object(forKey: other) }?.isNotFound == true)
    }

    @Test("files mode: one value file for both spellings, none left after removal by the other", arguments: [0, 1])
    func valueFiles(pair: Int) throws {
        let (written, other) = Self.pairs[pair]
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let disk = try openDataStore(store, valuesAsFiles: true)
        try disk.setObject(Data("1".utf8), forKey: written)
        try disk.setObject(Data("2".utf8), forKey: other)
        let path = try #require(try disk.entry(forKey: written).filePath)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data("2".utf8))
        #expect(try StoreFiles(store).values.count == 1)
        try disk.removeObject(forKey: other)
        #expect(try StoreFiles(store).values.isEmpty, "removal by the other spelling leaked the file")
    }

    @Test("Storage (memory in front of disk): the other spelling hits the same entry and removes it", arguments: [0, 1])
    func storage(pair: Int) throws {
        let (written, other) = Self.pairs[pair]
        let directory = TemporaryDirectory()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(),
                                        transformer: TransformerFactory.forData())
        try storage.setObject(Data("1".utf8), forKey: written)
        #expect(try storage.object(forKey: other) == Data("1".utf8))
        try storage.removeObject(forKey: other)
        #expect(try !storage.existsObject(forKey: written))
        #expect(storage.allKeys.isEmpty)
    }

    // Both spellings written again and again, then compaction: one live entry, the last value.
    @Test("compaction keeps one entry with the last value, whichever spelling wrote it", arguments: [0, 1])
    func compaction(pair: Int) throws {
        let (written, other) = Self.pairs[pair]
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try withEngineThresholds(in: directory.path, compactionMinimum: 16 << 10) {
            let disk = try openDataStore(store)
            for round in 0..<400 {
                try disk.setObject(Data(repeating: UInt8(round % 251), count: 100 + round), forKey: round % 2 == 0 ? written : other)
                try disk.setObject(Data("other".utf8), forKey: "plain")
            }
            disk.waitForCompaction()
            try disk.compactNow()
            #expect(disk.allKeys.count == 2)
            #expect(try disk.object(forKey: written) == Data(repeating: UInt8(399 % 251), count: 499))
            #expect(try StoreFiles(store).segments.count <= 2, "compaction did not run or did not remove its inputs")
        }
        let reopened = try openDataStore(store)
        #expect(reopened.allKeys.count == 2)
        #expect(try reopened.object(forKey: other) == Data(repeating: UInt8(399 % 251), count: 499))
        try reopened.removeObject(forKey: written)
        #expect(try openDataStore(store).allKeys == ["plain"])
    }
}
