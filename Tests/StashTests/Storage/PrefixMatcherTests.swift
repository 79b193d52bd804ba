import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The byte fast path of prefix matching answers exactly as `String.hasPrefix` (whole characters,
/// canonical equivalence), checked against it on hostile spellings and on many random keys.
@Suite("Prefix matching")
struct PrefixMatcherTests {
    /// Pieces that exercise every rule: ASCII, CR/LF, NFC and NFD spellings, a combining mark, the
    /// Kelvin and Ångström signs (canonically equivalent to "K" and "Å"), a ZWJ, CJK, an emoji.
    private static let pieces = ["a", "b", "K", "e", ".", "\r", "\n", "\u{E9}", "e\u{301}", "\u{301}", "\u{212A}",
                                 "\u{212B}", "\u{C5}", "A\u{30A}", "\u{200D}", "日", "🍎", "0", ""]

    @Test("hostile spellings: the matcher agrees with hasPrefix")
    func hostileSpellings() {
        let cases: [(String, String)] = [
            ("cafe\u{301}.menu", "caf\u{E9}"), ("caf\u{E9}.menu", "cafe\u{301}"), ("cafe\u{301}", "cafe"),
            ("\u{212A}ey", "Key"), ("Key", "\u{212A}"), ("a\r\nb", "a\r"), ("a\rb", "a\r"), ("user.000123.profile", "user.0001"),
            ("user.000123.profile", "user.0001"), ("user", "user.0001"), ("", ""), ("x", ""), ("e\u{301}", "e"), ("ab", "a"),
        ]
        for (key, prefix) in cases {
            #expect(PrefixMatcher(prefix).matches(key) == key.hasPrefix(prefix), "\(key.debugDescription) / \(prefix.debugDescription)")
        }
    }

    @Test("20,000 random keys and prefixes: the matcher agrees with hasPrefix")
    func randomKeys() {
        var generator = SeededGenerator(seed: 0x5EED)
        func text(_ count: Int) -> String {
            (0..<count).map { _ in Self.pieces[Int.random(in: 0..<Self.pieces.count, using: &generator)] }.joined()
        }
        for _ in 0..<20_000 {
            let prefix = text(Int.random(in: 0...3, using: &generator))
            let key = Bool.random(using: &generator) ? prefix + text(Int.random(in: 0...3, using: &generator))
                                                     : text(Int.random(in: 0...5, using: &generator))
            #expect(PrefixMatcher(prefix).matches(key) == key.hasPrefix(prefix), "\(key.debugDescription) / \(prefix.debugDescription)")
        }
    }
}
