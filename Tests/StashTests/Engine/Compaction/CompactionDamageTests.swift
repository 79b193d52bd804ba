import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A compaction plans its copy from the index's records alone (no key read in the store's turn) and
/// takes each key from the record it copies: a record changed in place since it was indexed — its value
/// or its key — must be found damaged, its key dropped, and every other entry copied with its value
/// and its place in the order of use; the index's entries moved in place (a key directory's) and in
/// the overlay alike.
@Suite("Compaction meets a record damaged in place", .serialized)
struct CompactionDamageTests: DiskStoreScenario {
    enum Damaged: String, CaseIterable {
        case value, key
    }

    @Test("the damaged record's key goes, every other key keeps its value and its place in the order of use",
          arguments: [false, true], Damaged.allCases)
    func damagedRecordDropsItsKeyOnly(fromKeyDirectory: Bool, damaged: Damaged) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: fromKeyDirectory ? 1 : nil) {
            let keys = (0..<6).map { "key-\($0)" }
            do {
                let store = try DiskStore(directory: path, readOnly: false)
                for (index, key) in keys.enumerated() { try Self.set(store, key, Data("value \(index)".utf8)) }
                store.close() // with a directory: the entries reopen as its slots, not the overlay's
            }
            let store = try DiskStore(directory: path, readOnly: false)
            // An order of use other than the order of writing.
            for key in ["key-4", "key-0", "key-5"] { _ = try Self.get(store, key) }
            let order = store.withIndex { $0.entriesOldestFirst.map(\.key) }
            #expect(order == ["key-1", "key-2", "key-3", "key-4", "key-0", "key-5"])
            #expect(store.withIndex { $0.overlayCount } == (fromKeyDirectory ? 0 : keys.count))

            // key-3's record changed in place: a value byte, or its key made another key of the same length
            // (the checksum fails either way; a record rewritten whole with a valid checksum is another key's).
            let record = try #require(store.record(forKey: "key-3"))
            let segment = try #require(store.log.segments[record.segment])
            var bytes = try Damage.bytes(segment.path)
            let recordBytes = Array(bytes[Int(record.offset)..<Int(record.offset + record.length)])
            let keyStart = try #require(recordBytes.firstRange(of: Array("key-3".utf8))).lowerBound
            let target = damaged == .value ? Int(record.length) - 2 : keyStart + 4
            bytes[Int(record.offset) + target] = damaged == .value ? bytes[Int(record.offset) + target] ^ 0x20 : UInt8(ascii: "9")
            try Damage.overwriteInPlace(segment.path, with: bytes)

            #expect(Self.compactNow(store))
            let survivors = order.filter { $0 != "key-3" }
            // The copy went least recently used first and each copy kept its entry's place.
            #expect(store.withIndex { $0.entriesOldestFirst.map(\.key) } == survivors)
            #expect(store.withIndex { $0.peek("key-3") } == nil, "a damaged record's key must go")
            #expect(store.log.segments[record.segment] == nil, "the input segment was removed")
            store.close()
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(reopened.withIndex { $0.entriesOldestFirst.map(\.key) } == survivors)
            #expect(Self.isNotFound(reopened, "key-3"))
            for key in survivors {
                #expect(try Self.get(reopened, key) == Data("value \(keys.firstIndex(of: key)!)".utf8))
            }
        }
    }

    @Test("keys written, overwritten and removed while the copy runs keep their latest state; the copy's moves go only to entries it copied")
    func writesDuringTheCopyKeepTheirState() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let store = try DiskStore(directory: path, readOnly: false)
                for index in 0..<8 { try Self.set(store, "key-\(index)", Data("old \(index)".utf8)) }
                store.close()
            }
            let store = try DiskStore(directory: path, readOnly: false)
            let held = HeldCompaction(store)
            held.start(store)
            #expect(store.isCompacting)
            try Self.set(store, "key-1", Data("new 1".utf8)) // a slot of the key directory shadowed by the overlay
            try store.writer.remove("key-2")
            try Self.set(store, "key-2", Data("back 2".utf8)) // removed, then written again: a new record
            try store.writer.remove("key-3")
            let victims = store.log.segments.keys.filter { $0 < (store.log.active?.id ?? 0) }
            #expect(held.finish(store))
            let expected = ["key-0": "old 0", "key-1": "new 1", "key-2": "back 2", "key-4": "old 4", "key-5": "old 5",
                            "key-6": "old 6", "key-7": "old 7"]
            func check(_ store: DiskStore) throws {
                #expect(Self.isNotFound(store, "key-3"))
                for (key, value) in expected { #expect(try Self.get(store, key) == Data(value.utf8), "\(key)") }
            }
            try check(store)
            #expect(!victims.isEmpty && victims.allSatisfy { store.log.segments[$0] == nil })
            store.close()
            try check(try DiskStore(directory: path, readOnly: false))
        }
    }
}
