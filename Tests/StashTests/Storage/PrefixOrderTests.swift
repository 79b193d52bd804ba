import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Prefix queries on a disk store come from the index's ordered keys: in key order (NFC bytes),
/// following every write, removal and `removeAll` between queries, across a key directory written,
/// a compaction and a reopen, with Stash's own keys left out.
@Suite("Prefix queries in key order")
struct PrefixOrderTests {
    private static func data(_ key: String) -> Data { Data(key.utf8) }

    @Test("allKeys(withPrefix:) and objects(withPrefix:) list in key order and follow changes between queries, a directory write, a compaction and a reopen")
    func followsChangesBetweenQueries() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: 34)
        var model = Set<String>()
        let pieces = ["user.", "inbox.", "7", "42", "e", "\u{E9}", "e\u{301}", "\u{AC00}", "\u{1100}\u{1161}", "/"]
        func randomKey() -> String { (0..<(1 + random.below(4))).map { _ in pieces[random.below(pieces.count)] }.joined() }
        func check(_ storage: DiskStorage<Data>, _ context: String) throws {
            for prefix in ["", "user.", "user.\u{E9}", "user.e\u{301}", "e", "\u{AC00}", randomKey(), randomKey()] {
                let expected = inKeyOrder(model.filter { $0.hasPrefix(prefix) })
                #expect(storage.allKeys(withPrefix: prefix) == expected, "\(context), prefix \(prefix.debugDescription)")
                let objects = try storage.objects(withPrefix: prefix)
                #expect(objects.map(\.key) == expected, "\(context), prefix \(prefix.debugDescription)")
                #expect(objects.allSatisfy { $0.value == Self.data($0.key) || String(decoding: $0.value, as: UTF8.self) == $0.key })
            }
        }
        try withEngineThresholds(in: path, compactionMinimum: 1 << 30, directoryMinimum: 3) {
            do {
                let storage = try openDataStore(path)
                for round in 0..<30 {
                    for _ in 0..<(round % 4 == 0 ? 40 : 3) {
                        let key = randomKey()
                        if random.below(4) == 0 {
                            try storage.removeObject(forKey: key)
                            model.remove(key)
                        } else {
                            try storage.setObject(Self.data(key), forKey: key)
                            model.insert(key) // one element per key, whatever its spelling, as the store
                        }
                    }
                    if round == 10 { try storage.compactNow() }
                    if round == 20 {
                        try storage.removeAll()
                        model = []
                    }
                    try check(storage, "round \(round)")
                }
            }
            // Reopened: from the directory written at close.
            let reopened = try openDataStore(path)
            try check(reopened, "reopened")
            try reopened.setObject(Self.data("user.zz"), forKey: "user.zz")
            model.insert("user.zz")
            try check(reopened, "reopened, then written")
        }
    }

    @Test("Storage's prefix reads are in key order; Stash's own keys never show, also with the empty prefix")
    func storageOrderAndReservedKeys() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        for key in ["b.2", "a", "b.10", "b.1", "\u{1}x", "c"] { try storage.setObject(1, forKey: key) }
        // Stash's bookkeeping under its namespace (a migration's progress), sorted first by its U+0001.
        var migrator = StorageMigrator<Int>(keyPrefix: "c", batchSize: 1)
        migrator.registerMigration("same") { data in try JSONDecoder().decode(Int.self, from: data) }
        _ = try migrator.migrate(storage)
        #expect(storage.hybridStorage.engine.sync { $0.keys }.contains(where: ReservedKeys.contains))
        let all = ["\u{1}x", "a", "b.1", "b.10", "b.2", "c"]
        #expect(storage.allKeys(withPrefix: "") == all)
        #expect(try storage.objects(withPrefix: "").map(\.key) == all)
        #expect(storage.allKeys(withPrefix: "\u{1}") == ["\u{1}x"])
        #expect(storage.allKeys(withPrefix: "\u{1}stash.").isEmpty)
        #expect(storage.allKeys(withPrefix: "b.1") == ["b.1", "b.10"])
        #expect(await storage.async.allKeys(withPrefix: "b.") == ["b.1", "b.10", "b.2"])
        #expect(try await storage.async.objects(withPrefix: "b.").map(\.key) == ["b.1", "b.10", "b.2"])
        try storage.removeObject(forKey: "b.10")
        #expect(storage.allKeys(withPrefix: "b.1") == ["b.1"])
    }

    @Test("objects(withPrefix:) reads packed values and values in files of their own together, and leaves out and drops a damaged one")
    func readsStretchesAndDropsDamage() throws {
        let directory = TemporaryDirectory()
        let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        func value(_ index: Int) -> Data {
            let marker = Data("<value \(index)>".utf8)
            return index % 7 == 3 ? marker + Data(repeating: UInt8(index), count: 300_000) : marker + Data(repeating: UInt8(index), count: index * 40)
        }
        // Written out of key order, so the records' order in the segment is not the keys'.
        for index in (0..<60).reversed() where index % 2 == 0 { try storage.setObject(value(index), forKey: String(format: "v.%02d", index)) }
        for index in 0..<60 where index % 2 == 1 { try storage.setObject(value(index), forKey: String(format: "v.%02d", index)) }
        let all = try storage.objects(withPrefix: "v.")
        #expect(all.map(\.key) == (0..<60).map { String(format: "v.%02d", $0) })
        #expect(all.enumerated().allSatisfy { $0.element.value == value($0.offset) })
        // A flipped byte in the value of v.20 (packed): left out, and dropped.
        let segment = directory.storePath() + "/" + (try #require(try StoreFiles(directory.storePath()).segments.last))
        let bytes = try Damage.bytes(segment)
        let marker = Array("<value 20>".utf8)
        let at = try #require((0...(bytes.count - marker.count)).first { Array(bytes[$0..<($0 + marker.count)]) == marker })
        try Damage.flip(segment, at: at + marker.count + 5)
        let after = try storage.objects(withPrefix: "v.")
        #expect(after.map(\.key) == (0..<60).filter { $0 != 20 }.map { String(format: "v.%02d", $0) })
        #expect(after.allSatisfy { $0.value == value(Int($0.key.dropFirst(2))!) })
        #expect(!storage.allKeys(withPrefix: "v.2").contains("v.20"), "the damaged entry is dropped, as a read drops it")
    }
}
