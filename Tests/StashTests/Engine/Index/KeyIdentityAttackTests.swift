import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// Contract item 8 through the index's overlay (``KeyTable``, keyed by the key's hash of its NFC
/// form): keys in several canonically equivalent spellings (a combining mark, Hangul jamo, the
/// Angstrom sign), the empty key, NUL, `/` and `..`, and look-alikes that are other keys, written and
/// removed in random spellings against a model keyed by Swift strings, through compactions and reopens.
@Suite("Key identity through the index's overlay, attacked")
struct KeyIdentityAttackTests {
    /// Each inner list is one key in its spellings; every list is another key.
    static let spellings: [[String]] = [
        ["caf\u{E9}", "cafe\u{301}"],
        ["cafe"],
        ["\u{AC00}", "\u{1100}\u{1161}"],
        ["\u{C5}", "\u{212B}", "A\u{30A}"],
        ["A"],
        ["\u{1E69}", "s\u{323}\u{307}", "\u{1E63}\u{307}"],
        [""],
        ["\u{0}"],
        ["a\u{0}b"],
        ["/"],
        [".."],
    ]

    @Test("keys written and removed in random canonically equivalent spellings answer as one key each, through compactions and reopens")
    func randomSpellingsAgainstModel() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, compactionMinimum: 2 << 10, directoryMinimum: 1, segmentLimit: 4096) {
            var random = SeededGenerator(seed: 808)
            var model: [String: Data] = [:]
            var storage: DiskStorage<Data>? = try openDataStore(path)
            for step in 0..<400 {
                let forms = Self.spellings[random.below(Self.spellings.count)]
                let key = forms[random.below(forms.count)]
                let store = try #require(storage)
                if random.below(5) == 0 {
                    try store.removeObject(forKey: key)
                    model[key] = nil
                } else {
                    let value = Data("\(step)|".utf8 + [UInt8](repeating: UInt8(step & 0xFF), count: 40 + random.below(200)))
                    try store.setObject(value, forKey: key)
                    model[key] = value
                }
                if step % 50 == 49 { try store.compactNow() }
                if step % 90 == 89 {
                    storage = nil // closed: the next open replays or reads the key directory
                    storage = try openDataStore(path)
                }
                if step % 10 == 9 { try Self.check(try #require(storage), against: model, at: step) }
            }
            storage = nil
            try Self.check(try openDataStore(path), against: model, at: 400)
        }
    }

    static func check(_ storage: DiskStorage<Data>, against model: [String: Data], at step: Int) throws {
        for forms in spellings {
            let wanted = model[forms[0]]
            for form in forms {
                let read = try? storage.object(forKey: form)
                #expect(read == wanted, "step \(step): \(form.unicodeScalars.map { String($0.value, radix: 16) }) read \(read.map { String(decoding: $0.prefix(6), as: UTF8.self) } ?? "nil")")
            }
        }
        let keys = storage.allKeys
        #expect(keys.count == model.count, "step \(step): \(keys.count) keys listed, \(model.count) stored")
        #expect(Set(keys.map { $0.precomposedStringWithCanonicalMapping }) == Set(model.keys.map { $0.precomposedStringWithCanonicalMapping }))
    }
}
