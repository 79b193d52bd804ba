import Foundation
import Testing
@testable import StashEngine
import StashTestSupport

/// The index's overlay table (``KeyTable``): entries found by the key's stable hash, checked against
/// a dictionary through random inserts, changes and removals, with hashes chosen to collide.
@Suite("Key table")
struct KeyTableTests {
    private static func record(_ hash: UInt64, _ tag: UInt32) -> DiskRecord {
        DiskRecord(segment: 1, offset: tag, length: 10, value: .inline(size: 1), expiry: StoredTime.never, lastAccess: 0,
                   keyHash: hash)
    }

    /// Random operations on 300 keys; `hashOf` decides how their hashes collide.
    private static func checkAgainstModel(seed: UInt64, hashOf: (Int) -> UInt64) {
        var random = SeededGenerator(seed: seed)
        var table = KeyTable()
        var model: [String: UInt32] = [:]
        for step in 0..<6_000 {
            let number = random.below(300)
            let key = "key-\(number)"
            let hash = hashOf(number)
            switch random.below(4) {
            case 0, 1: // set
                let tag = UInt32(step)
                if let position = table.position(of: key, hash: hash) {
                    table[position].record = record(hash, tag)
                } else {
                    table.insert(KeyTable.Entry(key: key, record: record(hash, tag), recency: UInt64(step)))
                }
                model[key] = tag
            case 2: // remove
                if let position = table.position(of: key, hash: hash) { table.remove(at: position) }
                model[key] = nil
            default: // look up
                #expect(table.position(of: key, hash: hash).map { table[$0].record.offset } == model[key])
            }
            #expect(table.count == model.count)
        }
        for number in 0..<300 {
            let key = "key-\(number)"
            #expect(table.position(of: key, hash: hashOf(number)).map { table[$0].record.offset } == model[key])
        }
        #expect(Dictionary(uniqueKeysWithValues: table.entries.map { ($0.key, $0.record.offset) }) == model)
    }

    @Test("random sets and removals find what a dictionary finds: distinct hashes")
    func distinctHashes() {
        Self.checkAgainstModel(seed: 1) { KeyHash.of("key-\($0)", seed: 7) }
    }

    @Test("keys whose hashes share their slot and their high half are told apart by their bytes, and removals keep the rest reachable")
    func collidingHashes() {
        // Eight hashes for 300 keys: long runs that wrap around the table's end, removed from the middle.
        Self.checkAgainstModel(seed: 2) { UInt64($0 % 8) << 32 | 0xFFFF_FFF0 | UInt64($0 % 3) }
        // Every key the same hash.
        Self.checkAgainstModel(seed: 3) { _ in 0xABCD_0000_0000_0001 }
    }

    @Test("a canonically equivalent spelling finds the entry; another key with the same hash does not")
    func equivalentSpellings() {
        var table = KeyTable()
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let hash = KeyHash.of(composed, seed: 9)
        #expect(hash == KeyHash.of(decomposed, seed: 9))
        table.insert(KeyTable.Entry(key: composed, record: Self.record(hash, 1), recency: 0))
        #expect(table.position(of: decomposed, hash: hash) == 0)
        #expect(table.position(of: "cafe", hash: hash) == nil)
        #expect(KeyTable.isSameKey(composed, decomposed))
        #expect(!KeyTable.isSameKey("a", "b"))
        #expect(KeyTable.isSameKey("", ""))
    }
}
