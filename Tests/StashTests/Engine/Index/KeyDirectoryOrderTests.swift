import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The index built on the key directory is the one a whole replay builds (entries, records, use order,
/// count, size) across random sessions; eviction over a large base takes exactly the least recently
/// used; memory hits and reads under a frozen clock order eviction across reopens; keys with equal
/// hashes stay two entries.
@Suite("The index over a key directory against a whole replay", .serialized)
struct KeyDirectoryOrderTests: KeyDirectoryScenario {
    /// Random sessions of writes (in either spelling of a key), batches, reads, removals, trims,
    /// compactions and `removeAll`, with a frozen or backwards clock, each ended by a close or a
    /// crash; after every open the index built on the directory is the one a whole replay builds,
    /// every value is the last one written, and a trim evicts exactly the least recently used.
    @Test("the index over a directory equals a whole replay across random sessions", arguments: [1, 2, 3, 4])
    func directoryEqualsWholeReplay(seed: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: UInt64(seed) * 7919)
        var model: [String: Data] = [:]
        var clock = Self.now.timeIntervalSince1970
        try withEngineThresholds(in: path, compactionMinimum: 1 << 30, directoryMinimum: 3, segmentLimit: 2048) {
            for session in 0..<14 {
                var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
                // Segments a removeAll just before still deletes in the background may be found superseded.
                let issues = store!.recoveryIssues.filter { !"\($0)".contains("is superseded") }
                #expect(issues.isEmpty, "session \(session): \(issues)")
                try Self.expectSameAsWholeReplay(path, store!, "seed \(seed) session \(session) at open")
                for (key, data) in model { #expect(Self.value(store!, key) == data, "\(key.debugDescription) in session \(session)") }
                #expect(store!.withIndex { $0.count } == model.count)
                for step in 0..<60 {
                    // A frozen clock most of the time, now and then one that goes back.
                    if random.below(8) == 0 { clock -= Double(random.below(1000)) }
                    let time = Date(timeIntervalSince1970: clock)
                    let key = Self.keyPool[random.below(Self.keyPool.count)]
                    switch random.below(20) {
                    case 0..<7:
                        let data = Self.payload(random.below(200), session * 100 + step)
                        try Self.set(store!, key, data, now: time)
                        model[key] = data
                    case 7..<11:
                        _ = try? store!.read(key, now: time)
                    case 11..<13:
                        try store!.writer.remove(key)
                        model[key] = nil
                    case 13:
                        let other = Self.keyPool[random.below(Self.keyPool.count)]
                        let data = Self.payload(random.below(200), session * 100 + step)
                        _ = try store!.writer.writeBatch([.set(key: key, data: data, expiry: .distantFuture), .remove(key: other)],
                                                  now: time, maxSize: 0, durable: false)
                        model[key] = data
                        model[other] = nil
                    case 14:
                        // The queue against the full order: exactly the oldest go.
                        let before = store!.withIndex { $0.entriesOldestFirst }
                        let target = store!.totalSize * 2 / 3
                        var expected = before
                        var size = store!.totalSize
                        while size > target, !expected.isEmpty { size -= expected.removeFirst().value.size }
                        try store!.writer.trim(toSize: target, now: time)
                        #expect(store!.withIndex { $0.entriesOldestFirst }.map(\.key) == expected.map(\.key), "trim in session \(session)")
                        let evicted = Set(before.map(\.key)).subtracting(expected.map(\.key))
                        for gone in evicted { model[gone] = nil }
                    case 15:
                        try store!.compactNow()
                    case 16 where random.below(4) == 0:
                        try store!.writer.removeAll()
                        model = [:]
                    default:
                        _ = try? store!.read(key, now: time)
                    }
                }
                if random.below(3) == 0 {
                    store = nil // a crash: pending access records are lost, the directory is not written
                } else {
                    store!.close()
                }
            }
        }
    }

    /// With more than 4,096 entries the queue holds only the oldest eighth, built by one pass; its
    /// entries go stale as they are used, overwritten, removed, or moved from the base to the overlay
    /// (compaction's `update`). Against a model of recencies, each round of eviction takes exactly
    /// the least recently used, with a base of 30,000 entries and changes aimed at the oldest.
    @Test("eviction over a large base takes exactly the least recently used, round after round")
    func evictionQueueOverALargeBase() throws {
        let seed: UInt64 = 0xA77AC
        let count = 30_000
        let entries: [(key: String, record: DiskRecord)] = (0..<count).map { index in
            let key = index % 7 == 0 ? "caf\u{E9} \(index)" : "key \(index)"
            return (key, DiskRecord(segment: 1, offset: UInt32(index * 100), length: 100, value: .inline(size: 10), expiry: 0,
                                    lastAccess: 0, keyHash: KeyHash.of(key, seed: seed)))
        }
        let bytes = DirectoryFormat.encode(position: DirectoryPosition(segment: 1, salt: 1, offset: 0), store: seed,
                                           segmentSalts: [1: 1]) { visit in
            for (key, record) in entries {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { bytes.deallocate() }
        let base = try #require(LoadedDirectory(copying: UnsafeRawBufferPointer(bytes)))
        var directory = KeyDirectory(seed: seed, base: base)
        var recency: [String: UInt64] = [:]
        for (number, entry) in entries.enumerated() { recency[entry.key] = UInt64(number) }
        var next = UInt64(count)
        var random = SeededGenerator(seed: 77)
        var written = count
        func oldest(_ number: Int) -> [String] {
            Array(recency.sorted { $0.value < $1.value }.prefix(number).map(\.key))
        }
        var candidates: [String] = []
        for step in 0..<200 {
            // Aim at the oldest: the entries the queue holds.
            if step % 10 == 0 { candidates = oldest(5000) }
            let key = random.below(5) == 0 || candidates.isEmpty ? "new \(step)" : candidates[random.below(candidates.count)]
            // The other spelling of an "é" key now and then: the same entry.
            let spelled = random.below(2) == 0 ? key.replacingOccurrences(of: "\u{E9}", with: "e\u{301}") : key
            switch random.below(7) {
            case 0, 4:
                written += 1
                directory.set(spelled, DiskRecord(segment: 2, offset: UInt32(written), length: 50, value: .inline(size: 5), expiry: 0,
                                                  lastAccess: 0, keyHash: KeyHash.of(spelled, seed: seed)))
                recency[key] = next
                next += 1
            case 1:
                if directory.touch(spelled, time: 0) != nil {
                    recency[key] = next
                    next += 1
                }
            case 2:
                #expect((directory.remove(spelled) != nil) == (recency.removeValue(forKey: key) != nil))
            case 3:
                // A compaction moving the record: recency kept, the base slot shadowed.
                _ = directory.update(spelled) { $0.offset += 1 }
            default:
                let number = [1, 2, 17, 300, 900, 2000][random.below(6)]
                let expected = oldest(number)
                var evicted: [String] = []
                directory.forEachOldestFirst { key, _ in
                    evicted.append(key)
                    return evicted.count < number
                }
                #expect(evicted.map { $0.precomposedStringWithCanonicalMapping } == expected.map { $0.precomposedStringWithCanonicalMapping },
                        "step \(step): \(number)")
                for key in expected {
                    directory.remove(key)
                    recency[key] = nil
                }
            }
            #expect(directory.count == recency.count, "step \(step)")
        }
    }

    /// Memory hits and disk reads are use (Contract item 5), with a clock that never moves: the order
    /// is the order of use, through a directory written at close and access records after one.
    @Test("memory hits and reads under a frozen clock order eviction across reopens with a directory")
    func memoryHitsOrderEvictionAcrossReopens() throws {
        let directory = TemporaryDirectory()
        let frozen = Self.now
        func open() throws -> Storage<Data> {
            try Storage<Data>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData(), now: { frozen })
        }
        func order(_ storage: Storage<Data>) -> [String] { storage.entryInfos.map(\.key) }
        try withEngineThresholds(in: directory.storePath(), directoryMinimum: 1) {
            do {
                let storage = try open()
                for index in 0..<5 { try storage.setObject(Self.payload(index), forKey: "k\(index)") }
                _ = try storage.object(forKey: "k0") // a memory hit
            }
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(directory.storePath())))
            do {
                let storage = try open()
                #expect(order(storage) == ["k1", "k2", "k3", "k4", "k0"])
                _ = try storage.object(forKey: "k1") // from disk
                _ = try storage.object(forKey: "k2") // from disk, then
                _ = try storage.object(forKey: "k3") // from disk,
                _ = try storage.object(forKey: "k2") // a memory hit after k3
            } // no change: no new directory, access records after the old one
            let storage = try open()
            #expect(order(storage) == ["k4", "k0", "k1", "k3", "k2"])
            try storage.hybridStorage.diskStorage.trim(toSize: 3 * Self.payload(0).count)
            #expect(Set(storage.allKeys) == ["k1", "k3", "k2"])
        }
    }

    /// Two different keys whose hashes are equal (forced: 64-bit collisions cannot be found by
    /// brute force) are two entries: found each by its own key, and an access record finds each by
    /// its position.
    @Test("keys with equal hashes in the directory stay two entries")
    func equalHashesStayApart() throws {
        let hash: UInt64 = 0xC0FFEE
        let keys = ["first", "second", "caf\u{E9}"]
        let bytes = DirectoryFormat.encode(position: DirectoryPosition(segment: 1, salt: 1, offset: 0), store: 9,
                                           segmentSalts: [1: 1]) { visit in
            for (number, key) in keys.enumerated() {
                var key = key
                let record = DiskRecord(segment: 1, offset: UInt32(number * 100), length: 100, value: .inline(size: number), expiry: 0,
                                        lastAccess: 0, keyHash: hash)
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { bytes.deallocate() }
        let base = try #require(LoadedDirectory(copying: UnsafeRawBufferPointer(bytes)))
        let slots = keys.map { base.find($0, hash: hash) }
        #expect(Set(slots.compactMap { $0 }).count == 3)
        #expect(base.find("cafe\u{301}", hash: hash) == slots[2])
        #expect(base.find("third", hash: hash) == nil)
        for (number, slot) in slots.enumerated() {
            #expect(base.find(hash: hash, segment: 1, offset: UInt32(number * 100)) == slot)
            #expect(slot.flatMap { base.key(at: $0) } == keys[number])
        }
    }
}
