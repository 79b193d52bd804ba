import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The key directory file and the index built on it (engine v3): its format, the overlay of changes
/// over the mapped base, recency, and what a store does with a directory that is damaged, stale or
/// another store's (Contract items 5, 7 and 8).
@Suite("Key directory")
struct KeyDirectoryTests {
    private static let seed: UInt64 = 0x5EED

    private static func entries(_ random: inout SeededGenerator, count: Int) -> [(key: String, value: DiskRecord)] {
        (0..<count).map { index in
            let value: StoredValue = random.below(3) == 0
                ? .file(id: random.next(), size: random.below(1 << 40), hash: random.next()) : .inline(size: random.below(1 << 18))
            let expiry = random.below(2) == 0 ? StoredTime.never : Double(random.below(1 << 30))
            let key = index % 5 == 0 ? "caf\u{E9} \(index) 가각" : index == 1 ? "" : "user.\(index).profile"
            let record = DiskRecord(segment: UInt32(random.below(4) + 1), offset: UInt32(truncatingIfNeeded: random.next()),
                                    length: UInt32(random.below(1 << 20)), value: value, expiry: expiry,
                                    lastAccess: Double(random.below(1 << 30)), keyHash: KeyHash.of(key, seed: seed))
            return (key, record)
        }
    }

    /// The directory file of `entries` (least recently used first), as bytes.
    private static func encode(_ entries: [(key: String, value: DiskRecord)],
                               position: DirectoryPosition = DirectoryPosition(segment: 4, salt: 44, offset: 80)) -> [UInt8] {
        let salts: [UInt32: UInt64] = [1: 11, 2: 22, 3: 33, 4: 44]
        let bytes = DirectoryFormat.encode(position: position, store: seed, segmentSalts: salts) { visit in
            for (key, record) in entries {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { bytes.deallocate() }
        return Array(bytes)
    }

    private static func directory(_ bytes: [UInt8]) -> KeyDirectory? {
        bytes.withUnsafeBytes { LoadedDirectory(copying: $0) }.map { KeyDirectory(seed: seed, base: $0) }
    }

    @Test("a directory maps to exactly the entries, order, position and totals it was written with")
    func roundTrip() throws {
        var random = SeededGenerator(seed: 61)
        for count in [0, 1, 2, 7, 50, 2000] {
            let entries = Self.entries(&random, count: count)
            let position = DirectoryPosition(segment: 4, salt: 44, offset: random.below(1 << 26))
            let bytes = Self.encode(entries, position: position)
            let directory = try #require(Self.directory(bytes))
            #expect(directory.count == count)
            #expect(directory.base?.header.position == position)
            #expect(directory.base?.header.totalSize == entries.reduce(0) { $0 + $1.value.size })
            for (key, record) in entries {
                #expect(directory.peek(key) == record, "\(key.debugDescription)")
            }
            #expect(directory.entriesOldestFirst.map(\.key) == entries.map(\.key))
            var live: [UInt32: Int] = [:]
            for (_, record) in entries { live[record.segment, default: 0] += Int(record.length) }
            #expect(directory.liveBytesBySegment() == live.filter { $0.value > 0 })
        }
    }

    // Contract 8: canonically equivalent spellings are one key in the mapped directory too.
    @Test("a key is found by any canonically equivalent spelling, and only by its own key")
    func canonicalLookups() throws {
        var random = SeededGenerator(seed: 62)
        let entries = Self.entries(&random, count: 40)
        let directory = try #require(Self.directory(Self.encode(entries)))
        #expect(directory.peek("cafe\u{301} 0 가각") == entries[0].value)
        #expect(directory.peek("cafe\u{301} 0 \u{1100}\u{1161}\u{1100}\u{1161}\u{11A8}") == entries[0].value)
        #expect(KeyHash.of("caf\u{E9}", seed: 1) == KeyHash.of("cafe\u{301}", seed: 1))
        #expect(KeyHash.of("caf\u{E9}", seed: 1) != KeyHash.of("caf\u{E9}", seed: 2))
        #expect(directory.peek("user.2.profil") == nil)
        #expect(directory.peek("user.2.profile ") == nil)
        #expect(directory.peek("cafe 0 가각") == nil)
    }

    // Contract 7: damage to the directory is detected whole: it is never read as other entries.
    @Test("a flipped, cut or extended directory is refused")
    func damageIsRefused() {
        var random = SeededGenerator(seed: 63)
        let original = Self.encode(Self.entries(&random, count: 30))
        for index in stride(from: 0, to: original.count, by: max(1, original.count / 700)) {
            var bytes = original
            bytes[index] ^= UInt8(random.below(255) + 1)
            #expect(Self.directory(bytes) == nil, "flip at \(index)")
        }
        for cut in stride(from: 0, to: original.count, by: 97) {
            #expect(Self.directory(Array(original.prefix(cut))) == nil, "cut at \(cut)")
        }
        #expect(Self.directory(original + [0]) == nil)
        var zeroed = original
        zeroed.replaceSubrange((original.count - 64)..., with: repeatElement(0, count: 64))
        #expect(Self.directory(zeroed) == nil)
    }

    @Test("changes go over the base: sets, removals and updates shadow its entries; counts and order follow")
    func overlayOverBase() throws {
        var random = SeededGenerator(seed: 64)
        let entries = Self.entries(&random, count: 100)
        var directory = try #require(Self.directory(Self.encode(entries)))
        let keys = entries.map(\.key)
        var replacement = entries[3].value
        replacement.offset = 7
        #expect(directory.set(keys[3], replacement) == entries[3].value)
        #expect(directory.peek(keys[3]) == replacement)
        #expect(directory.remove(keys[4]) == entries[4].value)
        #expect(directory.peek(keys[4]) == nil && directory.remove(keys[4]) == nil)
        var fresh = entries[5].value
        fresh.keyHash = KeyHash.of("new key", seed: Self.seed)
        #expect(directory.set("new key", fresh) == nil)
        #expect(directory.count == 100)
        #expect(directory.update(keys[0]) { $0.segment = 9 })
        #expect(directory.peek(keys[0])?.segment == 9)
        #expect(directory.touch(keys[1], time: 5)?.lastAccess == 5)
        // Order: untouched base entries as written, then the update (kept its place: oldest), then later uses.
        let order = directory.entriesOldestFirst.map(\.key)
        #expect(order.first == keys[0])
        #expect(Array(order.suffix(3)) == [keys[3], "new key", keys[1]])
        #expect(Set(directory.keys) == Set(keys).subtracting([keys[4]]).union(["new key"]))
        var evicted: [String] = []
        directory.forEachOldestFirst { key, _ in
            evicted.append(key)
            return evicted.count < 3
        }
        #expect(evicted == Array(order.prefix(3)))
    }

    @Test("eviction order is least recently used first across many rounds of use, writes and removal")
    func evictionOrderMatchesAModel() {
        var random = SeededGenerator(seed: 65)
        var directory = KeyDirectory(seed: Self.seed)
        var model: [String] = [] // least recently used first
        for step in 0..<20_000 {
            let key = "k\(random.below(6000))"
            switch random.below(4) {
            case 0, 1:
                let record = DiskRecord(segment: 1, offset: UInt32(step), length: 10, value: .inline(size: 1), expiry: 0, lastAccess: 0,
                                        keyHash: directory.hash(key))
                directory.set(key, record)
                model.removeAll { $0 == key }
                model.append(key)
            case 2:
                if directory.touch(key, time: Double(step)) != nil {
                    model.removeAll { $0 == key }
                    model.append(key)
                }
            default:
                var oldest: String?
                directory.forEachOldestFirst { key, _ in
                    oldest = key
                    return false
                }
                #expect(oldest == model.first, "step \(step)")
                if let oldest {
                    directory.remove(oldest)
                    model.removeFirst()
                }
            }
        }
        #expect(directory.entriesOldestFirst.map(\.key) == model)
    }

    // MARK: Through a store

    /// Whether the store at `path` opened from its key directory (it mapped one) and how many entries it has.
    private static func openedFromDirectory(_ path: String) throws -> (mapped: Bool, count: Int) {
        let store = try DiskStore(directory: path, readOnly: true)
        defer { store.close() }
        return store.withIndex { ($0.base != nil, $0.count) }
    }

    @Test("every write path leaves keys the directory finds after a reopen: set, batch, overwrite and removal of base keys, compaction, reads")
    func everyWritePathThroughTheDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var model: [String: Data] = [:]
        try withEngineThresholds(in: path, compactionMinimum: 1, directoryMinimum: 1) {
            for round in 0..<4 {
                do {
                    let disk = try openDataStore(path)
                    for index in 0..<50 {
                        let key = index % 7 == 0 ? "caf\u{E9}-\(index)" : "k\(index)"
                        let value = Data("round \(round) value \(index)".utf8)
                        if (index + round) % 5 == 0 {
                            try disk.removeObject(forKey: key)
                            model[key] = nil
                        } else {
                            try disk.setObject(value, forKey: key)
                            model[key] = value
                        }
                    }
                    var batch = StorageBatch<Data>()
                    for index in 0..<10 {
                        batch.setObject(Data("batch \(round) \(index)".utf8), forKey: "b\(index)")
                        model["b\(index)"] = Data("batch \(round) \(index)".utf8)
                    }
                    try disk.write(batch)
                    if round == 2 { try disk.compactNow() }
                    _ = try? disk.object(forKey: "k1")
                }
                let (mapped, count) = try Self.openedFromDirectory(path)
                #expect(mapped, "round \(round): the directory was not used")
                #expect(count == model.count)
                let disk = try openDataStore(path)
                #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                #expect(Set(disk.allKeys) == Set(model.keys))
                for (key, value) in model {
                    #expect(try disk.object(forKey: key.replacingOccurrences(of: "\u{E9}", with: "e\u{301}")) == value, "\(key)")
                }
            }
        }
    }

    @Test("a process that read many keys writes the directory when it closes: the next open replays no access records, and keeps their order")
    func readsAreCheckpointed() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let disk = try openDataStore(path)
                for index in 0..<100 { try disk.setObject(Data("v\(index)".utf8), forKey: "k\(index)") }
            }
            let read = (0..<100).reversed().map { "k\($0)" }.prefix(40)
            do {
                let disk = try openDataStore(path)
                for key in read { _ = try disk.object(forKey: key) }
            }
            let store = try DiskStore(directory: path, readOnly: true)
            defer { store.close() }
            #expect(store.accessesSinceDirectory == 0)
            #expect(store.withIndex { $0.base != nil })
            #expect(Array(store.withIndex { $0.entriesOldestFirst.map(\.key) }.suffix(40)) == Array(read))
        }
    }
}
