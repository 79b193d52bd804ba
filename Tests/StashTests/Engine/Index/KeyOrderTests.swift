import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The index's ordered keys (``KeyOrder``), which answer prefix queries: against the pass over every
/// key that answered them before (the reference), across random changes between queries, over a
/// base read from a directory file and an overlay, with keys spelled in NFC and NFD.
@Suite("Ordered keys for prefix queries")
struct KeyOrderTests {
    private static let seed: UInt64 = 0x0DE5

    /// Pieces keys are built of: ASCII, "é" in both spellings beside a plain "e" and the combining
    /// marks alone, Hangul as a syllable and as jamo, the Kelvin sign (canonically "K"), CR LF, a flag
    /// and its halves, a Tamil vowel sign that composes with the letter before it, and the end of ASCII.
    private static let pieces = ["a", "K", "k", "\u{212A}", "e", "\u{E9}", "e\u{301}", "\u{301}", "\u{327}", ".", "\r", "\n",
                                 "\u{AC00}", "\u{1100}", "\u{1161}", "\u{11A8}", "\u{1F1EB}", "\u{1F1F7}", "\u{0B92}", "\u{0BD7}",
                                 "\u{7F}", "\u{80}", "z", "\u{10FFFF}"]

    private static func randomKey(_ random: inout SeededGenerator, pieces maximum: Int = 4) -> String {
        (0..<random.below(maximum + 1)).map { _ in pieces[random.below(pieces.count)] }.joined()
    }

    private static func record(_ key: String, _ number: Int) -> DiskRecord {
        DiskRecord(segment: 1, offset: UInt32(number), length: 10, value: .inline(size: 1), expiry: 0, lastAccess: 0,
                   keyHash: KeyHash.of(key, seed: seed))
    }

    /// An index whose base is a directory file holding `keys` (each once), as a store opens it.
    private static func index(base keys: [String]) throws -> KeyDirectory {
        let salts: [UInt32: UInt64] = [1: 11]
        let bytes = DirectoryFormat.encode(position: DirectoryPosition(segment: 1, salt: 11, offset: 80),
                                           store: seed, segmentSalts: salts) { visit in
            for (number, key) in keys.enumerated() {
                let entry = record(key, number)
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), entry) }
            }
        }
        defer { bytes.deallocate() }
        let loaded = try #require(LoadedDirectory(copying: UnsafeRawBufferPointer(bytes)))
        return KeyDirectory(seed: seed, base: loaded)
    }

    /// What the pass over every key answered: the matching keys as the index spells them, sorted.
    private static func reference(_ index: KeyDirectory, _ prefix: String) -> [String] {
        let matcher = PrefixMatcher(prefix)
        return inKeyOrder(index.keys { matcher.matches($0) })
    }

    private static func expectSame(_ index: inout KeyDirectory, _ prefix: String, _ context: String) {
        let matcher = PrefixMatcher(prefix)
        let listed = index.keys(withPrefix: prefix, matching: matcher.matches)
        let expected = reference(index, prefix)
        // Spellings compared scalar by scalar: the listing gives each key as the index holds it.
        #expect(listed.map { Array($0.unicodeScalars) } == expected.map { Array($0.unicodeScalars) },
                "\(context): prefix \(prefix.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test("prefix queries list what a pass over every key lists, in order, across random writes, removals and respellings",
          arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func agreesWithAPassOverEveryKey(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var baseKeys: [String] = []
        var seen = Set<String>()
        for _ in 0..<150 {
            let key = Self.randomKey(&random)
            if seen.insert(key).inserted { baseKeys.append(key) }
        }
        var index = try Self.index(base: baseKeys)
        var number = 1_000
        for round in 0..<40 {
            // Between queries, a few changes (merged in place) or many (merged in one pass).
            let changes = random.below(3) == 0 ? 30 + random.below(60) : random.below(6)
            for _ in 0..<changes {
                let key = Self.randomKey(&random)
                number += 1
                switch random.below(10) {
                case 0..<6: index.set(key, Self.record(key, number))
                case 6..<9: index.remove(key)
                default: index.update(key) { $0.expiry = 5 } // a base entry changed moves to the overlay
                }
            }
            if round == 25 { index.removeAll() }
            for _ in 0..<6 {
                Self.expectSame(&index, Self.randomKey(&random, pieces: 2), "seed \(seed) round \(round)")
            }
            Self.expectSame(&index, "", "seed \(seed) round \(round)")
        }
    }

    @Test("the prefix's own characters decide: canonical equivalents, a prefix ending inside a character, a key equal to the prefix")
    func canonicalEquivalenceAndCharacterBoundaries() throws {
        let keys = ["cafe\u{301}.menu", "caf\u{E9}.hours", "cafeteria", "cafe", "\u{212A}elvin", "Kilo", "\u{1100}\u{1161}x", "\u{AC00}y",
                    "line\r\nnext", "line\rx", "\u{1F1EB}\u{1F1F7}.fr", "\u{1F1EB}", "e\u{301}", "e"]
        var index = try Self.index(base: Array(keys.prefix(7)))
        for (number, key) in keys.dropFirst(7).enumerated() { index.set(key, Self.record(key, number + 100)) }
        func listed(_ prefix: String) -> [String] {
            let matcher = PrefixMatcher(prefix)
            return index.keys(withPrefix: prefix, matching: matcher.matches)
        }
        // NFC prefix finds the NFD key and the reverse; "cafe" is not a prefix of "café" (its "e" is
        // one character with the accent); the key equal to the prefix is listed.
        #expect(listed("caf\u{E9}") == ["caf\u{E9}.hours", "cafe\u{301}.menu"])
        #expect(listed("cafe\u{301}.") == ["caf\u{E9}.hours", "cafe\u{301}.menu"])
        #expect(listed("cafe") == ["cafe", "cafeteria"])
        #expect(listed("caf") == ["cafe", "cafeteria", "caf\u{E9}.hours", "cafe\u{301}.menu"])
        // The Kelvin sign is "K"; a jamo pair is its syllable; a lone jamo ends inside the syllable.
        #expect(listed("K") == ["\u{212A}elvin", "Kilo"])
        #expect(listed("\u{AC00}") == ["\u{1100}\u{1161}x", "\u{AC00}y"])
        #expect(listed("\u{1100}").isEmpty)
        // Half a flag, half of CR LF: whole characters only, as `hasPrefix` says.
        #expect(listed("\u{1F1EB}") == ["\u{1F1EB}"])
        #expect(listed("line\r").contains("line\rx"))
        #expect(listed("line\r") == Self.reference(index, "line\r")) // CR LF after it: whatever `hasPrefix` says, as before
        #expect(listed("e") == ["e"])
        #expect(listed("") == Self.reference(index, ""))
        #expect(listed("zzz").isEmpty)
        for key in keys { #expect(listed(key).contains(key), "\(key.debugDescription) lists itself") }
    }

    @Test("the order is that of the NFC bytes, also where Swift's own comparison of decomposed Hangul is no order")
    func orderOfDecomposedHangul() throws {
        // The standard library says neither of "\u{1100}\u{1161}" and "\u{AC00}\u{AC00}" is less than the other.
        var index = try Self.index(base: ["\u{AC00}\u{AC00}", "e\u{1100}\u{1161}", "\u{1100}\u{1161}", "e\u{AC00}\u{AC00}", "a\u{AC00}b"])
        index.set("a\u{1100}\u{1161}", Self.record("a\u{1100}\u{1161}", 9))
        let listed = index.keys(withPrefix: "", matching: { _ in true })
        #expect(listed.map { Array($0.unicodeScalars) }
            == ["a\u{1100}\u{1161}", "a\u{AC00}b", "e\u{1100}\u{1161}", "e\u{AC00}\u{AC00}", "\u{1100}\u{1161}", "\u{AC00}\u{AC00}"].map { Array($0.unicodeScalars) })
        #expect(index.keys(withPrefix: "\u{AC00}", matching: { $0.hasPrefix("\u{AC00}") }).count == 2)
        #expect(index.keys(withPrefix: "a\u{AC00}", matching: { $0.hasPrefix("a\u{AC00}") }).count == 2)
    }

    @Test("writing a directory keeps the order: a query after it is answered without sorting again, and right")
    func orderSurvivesANewBase() throws {
        var index = try Self.index(base: ["b", "a", "c"])
        #expect(index.keys(withPrefix: "", matching: { _ in true }) == ["a", "b", "c"])
        index.set("ab", Self.record("ab", 10))
        index.remove("c")
        let order = index.order
        #expect(order != nil)
        var rebased = try Self.index(base: ["a", "b", "ab"])
        rebased.order = order
        #expect(rebased.keys(withPrefix: "a", matching: { $0.hasPrefix("a") }) == ["a", "ab"])
        #expect(rebased.order?.keys == ["a", "ab", "b"])
    }
}

/// `keys` in the order of their NFC bytes (what prefix listings promise).
func inKeyOrder(_ keys: [String]) -> [String] {
    keys.map { (KeyOrder.nfcBytes($0), $0) }.sorted { $0.0.lexicographicallyPrecedes($1.0) }.map(\.1)
}
