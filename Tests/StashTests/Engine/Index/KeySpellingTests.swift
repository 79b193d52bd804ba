import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 8: canonically equivalent spellings are one key, listed in the spelling of its latest
/// write — in the process, after a compaction (which copies each record with the key it holds), and
/// after a reopen, whether the index comes from the key directory or from replaying the records.
@Suite("A key's spelling in listings", .serialized)
struct KeySpellingTests: DiskStoreScenario {
    static let composed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"

    /// The keys listed, spelled out as Unicode scalars (Swift's `==` cannot tell the spellings apart).
    static func spellings(_ store: DiskStore) -> [[UInt32]] {
        store.withIndex { $0.keys }.map { $0.unicodeScalars.map(\.value) }.sorted { $0.lexicographicallyPrecedes($1) }
    }

    static let expected = [Self.decomposed, "cafeteria"].map { $0.unicodeScalars.map(\.value) }.sorted { $0.lexicographicallyPrecedes($1) }

    @Test("the latest write's spelling, through a compaction and a reopen from the key directory or the records",
          arguments: [false, true], [false, true])
    func latestSpellingIsListed(keysInDirectory: Bool, directoryLostBeforeReopen: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: keysInDirectory ? 1 : 1_000_000) {
            do {
                let store = try DiskStore(directory: path, readOnly: false)
                try Self.set(store, Self.composed, Data("one".utf8))
                try Self.set(store, "cafeteria", Data("three".utf8))
                store.close() // with a directory, the reopened entry is a slot of it; without, an entry of the overlay
            }
            let store = try DiskStore(directory: path, readOnly: false)
            try Self.set(store, Self.decomposed, Data("two".utf8))
            #expect(Self.spellings(store) == Self.expected, "in the process")
            #expect(Self.compactNow(store))
            #expect(Self.spellings(store) == Self.expected, "after a compaction")
            store.close()
            if directoryLostBeforeReopen { try? FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName) }
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(Self.spellings(reopened) == Self.expected, "after a reopen")
            for spelling in [Self.composed, Self.decomposed] { #expect(try Self.get(reopened, spelling) == Data("two".utf8)) }
            try reopened.writer.remove(Self.composed)
            #expect(Self.isNotFound(reopened, Self.decomposed))
            #expect(reopened.withIndex { $0.keys } == ["cafeteria"])
        }
    }

    @Test("prefix listings through DiskStorage list one key, in its latest spelling, after a compaction and a reopen")
    func prefixListingAfterCompaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1_000_000) {
            do {
                let disk = try openDataStore(path)
                try disk.setObject(Data("a".utf8), forKey: Self.composed)
                _ = disk.allKeys(withPrefix: "caf") // the order of keys exists from here on
                try disk.setObject(Data("b".utf8), forKey: Self.decomposed)
                try disk.setObject(Data("c".utf8), forKey: "cafeteria")
                try disk.compactNow()
                #expect(disk.allKeys(withPrefix: "caf").count == 2)
                #expect(disk.allKeys(withPrefix: Self.composed).map { Array($0.unicodeScalars) } == [Array(Self.decomposed.unicodeScalars)])
            }
            let disk = try openDataStore(path)
            #expect(disk.allKeys.count == 2)
            #expect(disk.allKeys(withPrefix: Self.decomposed).map { Array($0.unicodeScalars) } == [Array(Self.decomposed.unicodeScalars)])
            #expect(try disk.object(forKey: Self.composed) == Data("b".utf8))
        }
    }
}
