import Foundation
import Observation
import Testing
@testable import Stash
@testable import StashEngine

/// `ObservableValue.value` as a binding: a default for a missing key, writes through to the store, a
/// failed write leaves the store's value and says why; values that no longer decode are reported by
/// key, never shown as a silent nil or a missing row.
@Suite("Observable values bind and report errors", .serialized) // the main actor, one test at a time
@MainActor
struct ObservableBindingTests {
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a bound value shows its default for a missing key, writes through when set, and nil removes it")
    func boundValueWritesThrough() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let nobody = User(name: "", age: 0)
        let me = ObservableValue("me", in: storage, default: nobody)
        #expect(me.value == nobody)
        #expect(try storage.objectIfPresent(forKey: "me") == nil) // the default is not stored

        me.value = User(name: "Ada", age: 36)
        #expect(me.value == User(name: "Ada", age: 36))
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 36))
        #expect(me.error == nil)

        me.value?.age += 1 // a binding's edit of one field: read, change, write
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 37))

        me.value = nil
        #expect(try storage.existsObject(forKey: "me") == false)
        #expect(me.value == nobody)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a write that fails leaves the value the store has and exposes the error")
    func failedWriteKeepsStoreValue() throws {
        let directory = TemporaryDirectory()
        let writable = try makeUserStorage(in: directory)
        try writable.setObject(User(name: "Ada", age: 36), forKey: "me")
        var config = directory.diskConfig("store")
        config.readOnly = true
        let readOnly = try Storage<User>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: User.self))
        let me = ObservableValue("me", in: readOnly)

        me.value = User(name: "Bob", age: 41)
        #expect(me.value == User(name: "Ada", age: 36))
        #expect(me.error as? StorageError == .readOnly(directory: readOnly.path))
        #expect(try writable.object(forKey: "me") == User(name: "Ada", age: 36))
        #expect(throws: StorageError.readOnly(directory: readOnly.path)) { try me.set(User(name: "Bob", age: 41)) }

        // The next change that succeeds clears the error.
        try writable.setObject(User(name: "Cy", age: 5), forKey: "me")
        me.applyReceivedChanges()
        #expect(me.value == User(name: "Cy", age: 5))
        #expect(me.error == nil)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a value that no longer decodes shows as an error naming the key, and clears when rewritten")
    func undecodableValueIsAnError() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let raw = storage.transformData()
        try raw.setObject(Data(#"{"fullName":"Ada"}"#.utf8), forKey: "me") // the model changed
        let me = ObservableValue("me", in: storage)
        #expect(me.value == nil)
        let failure = try #require(me.error as? StorageError)
        guard case .decodingFailed(let cause, let key) = failure else {
            Issue.record("expected decodingFailed, got \(failure)")
            return
        }
        #expect(key == "me")
        #expect(cause is DecodingError)
        #expect("\(failure)".contains("\"me\""))

        try raw.setObject(Data("not json".utf8), forKey: "me") // while it follows the store
        me.applyReceivedChanges()
        #expect(me.value == nil)
        #expect((me.error as? StorageError)?.decodingKey == "me")

        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        me.applyReceivedChanges()
        #expect(me.value == User(name: "Ada", age: 36))
        #expect(me.error == nil)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a collection reports the keys that do not decode, with their errors, instead of dropping them")
    func collectionReportsUndecodableKeys() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let raw = storage.transformData()
        try storage.setObject(User(name: "Ada", age: 36), forKey: "team.ada")
        try raw.setObject(Data(#"{"fullName":"Bob"}"#.utf8), forKey: "team.bob")
        let team = ObservableCollection(prefix: "team.", in: storage)
        #expect(team.values == ["team.ada": User(name: "Ada", age: 36)])
        #expect(Set(team.errors.keys) == ["team.bob"])
        #expect((team.errors["team.bob"] as? StorageError)?.decodingKey == "team.bob")

        try raw.setObject(Data("[]".utf8), forKey: "team.cy") // while it follows the store
        team.applyReceivedChanges()
        #expect(Set(team.errors.keys) == ["team.bob", "team.cy"])

        try storage.setObject(User(name: "Bob", age: 41), forKey: "team.bob") // migrated
        try storage.removeObject(forKey: "team.cy")
        team.applyReceivedChanges()
        #expect(team.values == ["team.ada": User(name: "Ada", age: 36), "team.bob": User(name: "Bob", age: 41)])
        #expect(team.errors.isEmpty)
        #expect(team.sortedKeys == ["team.ada", "team.bob"])
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a collection lists its keys in the order of allKeys(withPrefix:), also keys of decomposed Hangul")
    func collectionSortsKeysAsThePrefixListingDoes() throws {
        // Swift's `<` orders neither of the first two before the other (a sort by it leaves them as the
        // dictionary happens to list them); their NFC bytes do ("가" < "가가").
        let keys = ["team.\u{AC00}\u{AC00}", "team.\u{1100}\u{1161}", "team.z", "team.a"]
        for arrival in [keys, Array(keys.reversed())] {
            let directory = TemporaryDirectory()
            let other = try makeUserStorage(in: directory)
            for key in arrival { try other.setObject(User(name: key, age: 1), forKey: key) }
            let team = ObservableCollection(prefix: "team.", in: other)
            #expect(team.sortedKeys.map { Array($0.unicodeScalars) } == [
                "team.a", "team.z", "team.\u{1100}\u{1161}", "team.\u{AC00}\u{AC00}",
            ].map { Array($0.unicodeScalars) })
            #expect(team.sortedKeys.map { Array($0.unicodeScalars) } == other.allKeys(withPrefix: "team.").map { Array($0.unicodeScalars) })
        }
    }
}

extension StorageError {
    /// The key a ``decodingFailed(_:key:)`` names; nil for another case.
    var decodingKey: String? {
        if case .decodingFailed(_, let key) = self { return key }
        return nil
    }
}
