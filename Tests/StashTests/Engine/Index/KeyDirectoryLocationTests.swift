import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A removal of one key finds it once (``KeyDirectory/locate(_:)``) and removes it where it was
/// found: a location that changes made stale (an entry added, removed or moved in between, the index
/// replaced) must still remove that key and no other.
@Suite("Key directory: removing where a key was found")
struct KeyDirectoryLocationTests {
    private static let seed: UInt64 = 0x10CA7E

    private static func record(_ key: String, _ number: Int) -> DiskRecord {
        DiskRecord(segment: 1, offset: UInt32(number) * 64, length: 64, value: .inline(size: number % 7), expiry: StoredTime.never,
                   lastAccess: 0, keyHash: KeyHash.of(key, seed: seed))
    }

    /// An index whose base directory holds `keys` (records numbered by position), nothing in the overlay.
    private static func index(base keys: [String]) throws -> KeyDirectory {
        let bytes = DirectoryFormat.encode(position: DirectoryPosition(segment: 1, salt: 1, offset: 64),
                                           store: seed, segmentSalts: [1: 1]) { visit in
            for (number, key) in keys.enumerated() {
                let record = record(key, number)
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        let loaded = try #require(LoadedDirectory(adopting: bytes))
        return KeyDirectory(seed: seed, base: loaded)
    }

    @Test("a location goes stale with any change in between, and the removal still takes exactly its key")
    func staleLocationsRemoveTheirKey() throws {
        var random = SeededGenerator(seed: 7)
        let baseKeys = (0..<300).map { "base \($0)" }
        var index = try Self.index(base: baseKeys)
        var model = Dictionary(uniqueKeysWithValues: baseKeys.enumerated().map { ($1, Self.record($1, $0)) })
        var number = baseKeys.count
        for step in 0..<4_000 {
            // Half the keys in the overlay (written since the base), half in the base.
            let key = random.below(2) == 0 ? "base \(random.below(300))" : "new \(random.below(300))"
            switch random.below(3) {
            case 0:
                number += 1
                let record = Self.record(key, number)
                #expect(index.set(key, record) == model[key], "step \(step)")
                model[key] = record
            case 1:
                guard let (found, location) = index.locate(key) else {
                    #expect(model[key] == nil, "step \(step): \(key) not found")
                    continue
                }
                #expect(found == model[key], "step \(step)")
                if random.below(2) == 0 {
                    // Something in between: a key written or removed (an overlay entry may move), maybe this one.
                    let other = random.below(4) == 0 ? key : random.below(2) == 0 ? "base \(random.below(300))" : "new \(random.below(300))"
                    if random.below(3) == 0 {
                        number += 1
                        index.set(other, Self.record(other, number))
                        model[other] = Self.record(other, number)
                    } else {
                        #expect(index.remove(other) == model.removeValue(forKey: other), "step \(step)")
                    }
                }
                #expect(index.remove(key, at: location, hash: found.keyHash) == model.removeValue(forKey: key), "step \(step)")
            default:
                #expect(index.remove(key) == model.removeValue(forKey: key), "step \(step)")
            }
            #expect(index.count == model.count, "step \(step)")
        }
        for (key, record) in model { #expect(index.peek(key) == record, "\(key)") }
        #expect(Set(index.keys) == Set(model.keys))
    }

    @Test("a location in an index since replaced is stale: the new index looks the key up itself")
    func locationOfAReplacedIndex() throws {
        var old = try Self.index(base: ["a", "b"])
        let (found, location) = try #require(old.locate("b"))
        old.remove("a")
        // The store's index replaced (a reopen, a directory written): a fresh one, its own changes
        // counted anew, of another size, so that the old slot holds another key or none.
        let others = (0..<50).map { "other \($0)" }
        var fresh = try Self.index(base: others + ["b"])
        #expect(fresh.remove("b", at: location, hash: found.keyHash) == Self.record("b", others.count))
        #expect(fresh.peek("b") == nil)
        #expect(fresh.count == others.count)
        for (number, key) in others.enumerated() { #expect(fresh.peek(key) == Self.record(key, number)) }
    }
}
