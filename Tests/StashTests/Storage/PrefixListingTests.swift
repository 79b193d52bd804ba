import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `allKeys(withPrefix:)` on every layer, and what "prefix" means for Swift strings.
@Suite("Prefix listing")
struct PrefixListingTests {
    /// Pieces keys are built of: namespaces, separators, and one letter spelled three canonically
    /// equivalent ways ("é" precomposed, "e" + combining acute) beside the plain "e" it must not match.
    private static let pieces = ["user", "inbox", ".", "42", "e", "\u{E9}", "e\u{301}", "\u{AC00}", "\u{1100}\u{1161}", "/", ""]

    private static func randomKey(_ generator: inout SeededGenerator) -> String {
        (0..<(1 + generator.below(5))).map { _ in pieces[generator.below(pieces.count)] }.joined()
    }

    @Test("prefix listing agrees with a filtered allKeys on random keys, NFC and NFD spellings included",
          arguments: [UInt64(1), 2, 3])
    func agreesWithFilteredAllKeys(seed: UInt64) async throws {
        let directory = TemporaryDirectory()
        var generator = SeededGenerator(seed: seed)
        var model = Set<String>() // Swift's Set treats canonically equivalent spellings as one key, as the store does
        do {
            let storage = try makeUserStorage(in: directory)
            for _ in 0..<300 {
                let key = Self.randomKey(&generator)
                if generator.below(5) == 0 {
                    try storage.removeObject(forKey: key)
                    model.remove(key)
                } else {
                    try storage.setObject(User(name: key, age: 1), forKey: key)
                    model.insert(key)
                }
            }
            try check(storage, model: model, generator: &generator)
            for _ in 0..<10 {
                let prefix = Self.randomKey(&generator)
                #expect(Set(await storage.async.allKeys(withPrefix: prefix)) == model.filter { $0.hasPrefix(prefix) })
            }
        }
        // After a restart, from the index read back from disk.
        let reopened = try makeUserStorage(in: directory)
        try check(reopened, model: model, generator: &generator)
    }

    private func check(_ storage: Storage<User>, model: Set<String>, generator: inout SeededGenerator) throws {
        let allKeys = storage.allKeys
        #expect(Set(allKeys) == model)
        for _ in 0..<40 {
            let prefix = Self.randomKey(&generator)
            let listed = storage.allKeys(withPrefix: prefix)
            #expect(listed.count == Set(listed).count, "one spelling per key")
            #expect(Set(listed) == Set(allKeys.filter { $0.hasPrefix(prefix) }), "prefix \(prefix.unicodeScalars.map(\.value))")
            #expect(Set(listed) == model.filter { $0.hasPrefix(prefix) })
        }
    }

    @Test("an NFC prefix finds keys stored in NFD and the reverse; a prefix ends on whole characters")
    func canonicalEquivalence() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "cafe\u{301}.menu")   // NFD
        try storage.setObject(User(name: "b", age: 1), forKey: "caf\u{E9}.hours")    // NFC
        try storage.setObject(User(name: "c", age: 1), forKey: "cafeteria")
        #expect(Set(storage.allKeys(withPrefix: "caf\u{E9}")) == ["cafe\u{301}.menu", "caf\u{E9}.hours"])
        #expect(Set(storage.allKeys(withPrefix: "cafe\u{301}.")) == ["cafe\u{301}.menu", "caf\u{E9}.hours"])
        #expect(storage.allKeys(withPrefix: "cafe") == ["cafeteria"])  // "e\u{301}" is one character, not "e"
        #expect(storage.allKeys(withPrefix: "").count == 3)
        #expect(storage.allKeys(withPrefix: "tea").isEmpty)
    }

    @Test("every layer lists by prefix: memory, disk, hybrid, sync, async with a completion handler")
    func everyLayer() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        for key in ["user.1.name", "user.1.mail", "user.2.name", "users", "inbox.1"] {
            try storage.setObject(User(name: key, age: 1), forKey: key)
        }
        let expected: Set<String> = ["user.1.name", "user.1.mail"]
        #expect(Set(storage.allKeys(withPrefix: "user.1.")) == expected)
        #expect(Set(storage.hybridStorage.allKeys(withPrefix: "user.1.")) == expected)
        #expect(Set(storage.hybridStorage.diskStorage.allKeys(withPrefix: "user.1.")) == expected)
        #expect(Set(storage.hybridStorage.memoryStorage.allKeys(withPrefix: "user.1.")) == expected)
        #expect(Set(storage.syncStorage.allKeys(withPrefix: "user.1.")) == expected)
        let viaCompletion: Set<String> = try await withCheckedThrowingContinuation { continuation in
            storage.async.allKeys(withPrefix: "user.1.") { result in continuation.resume(with: result.map(Set.init)) }
        }
        #expect(viaCompletion == expected)
        // Through the protocol: the layer's own listing, not the filter of the default implementation.
        let aware: any StorageAware<User> = storage.hybridStorage.memoryStorage
        #expect(Set(aware.allKeys(withPrefix: "user.")) == expected.union(["user.2.name"]))
        let memory = MemoryStorage<Int>()
        try memory.setObject(1, forKey: "a.1")
        try memory.setObject(2, forKey: "b.1")
        #expect(memory.allKeys(withPrefix: "a.") == ["a.1"])
    }

    @Test("the async listing keeps the queue's order: a write submitted before it is listed")
    func asyncListingAfterAsyncWrite() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        storage.async.setObject(User(name: "x", age: 1), forKey: "ns.late") { _ in }
        #expect(await storage.async.allKeys(withPrefix: "ns.") == ["ns.late"])
    }
}
