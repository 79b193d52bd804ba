import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// `update(forKey:default:expiry:_:)`: read, change and write as one step, on every layer and API.

@Suite("Update: read, change and write as one step")
struct UpdateTests {
    @Test("update starts from the stored value, writes the new one and returns it; memory and a reopen agree")
    func changesTheStoredValue() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let new = try storage.update(forKey: "k") { $0.age += 1 }
        #expect(new == User(name: "a", age: 2))
        #expect(try storage.object(forKey: "k") == new)
        #expect(storage.hybridStorage.memoryEntry(forKey: "k")?.object == new)
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: User.self))
        #expect(try reopened.object(forKey: "k") == new)
    }

    @Test("a missing key starts from the default; without one it throws notFound and writes nothing")
    func missingKey() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        #expect(try storage.update(forKey: "k", default: User(name: "new", age: 0)) { $0.age = 5 } == User(name: "new", age: 5))
        #expect(storageError { _ = try storage.update(forKey: "missing") { $0.age += 1 } } == .notFound)
        #expect(storage.allKeys == ["k"])
    }

    @Test("an expired value counts as missing: the default is used and the storage's expiry applies again")
    func expiredCountsAsMissing() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, expiry: .seconds(10), clock: clock)
        try storage.setObject(User(name: "old", age: 41), forKey: "k")
        clock.advance(by: 20)
        let new = try storage.update(forKey: "k", default: User(name: "fresh", age: 0)) { $0.age += 1 }
        #expect(new == User(name: "fresh", age: 1))
        #expect(try storage.entry(forKey: "k").expiry == .date(clock.now.addingTimeInterval(10)))
        #expect(storageError { _ = try storage.update(forKey: "gone-too") { $0.age += 1 } } == .notFound)
    }

    @Test("without an expiry the stored value's expiry is kept; with one it is replaced")
    func expiryKeptOrReplaced() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let first = clock.now.addingTimeInterval(100)
        try storage.setObject(User(name: "a", age: 1), forKey: "k", expiry: .date(first))
        clock.advance(by: 10)
        try storage.update(forKey: "k") { $0.age += 1 }
        #expect(try storage.entry(forKey: "k").expiry == .date(first))
        try storage.update(forKey: "k", expiry: .seconds(5)) { $0.age += 1 }
        #expect(try storage.entry(forKey: "k").expiry == .date(clock.now.addingTimeInterval(5)))
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: User.self))
        #expect(try reopened.entry(forKey: "k").object.age == 3)
    }

    @Test("a body that throws writes nothing, no observer hears anything, and its error is rethrown")
    func throwingBodyWritesNothing() throws {
        struct Refused: Error, Equatable {}
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let heard = Recorder<KeyChange<User>>()
        let token = storage.addObserver(heard, forKey: "k") { recorder, _, change in recorder.append(change) }
        #expect(throws: Refused()) {
            try storage.update(forKey: "k") { user in
                user.age = 99
                throw Refused()
            }
        }
        #expect(try storage.object(forKey: "k") == User(name: "a", age: 1))
        storage.waitForObservers()
        #expect(heard.received.isEmpty)
        token.cancel()
    }

    @Test("observers hear one change, whose before is the value read")
    func observersHearOneChange() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let heard = Recorder<KeyChange<User>>()
        let changes = Recorder<StorageChange>()
        let token = storage.addObserver(heard, forKey: "k") { recorder, _, change in recorder.append(change) }
        let storageToken = storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        try storage.update(forKey: "k") { $0.age = 2 }
        #expect(heard.received == [.edit(before: User(name: "a", age: 1), after: User(name: "a", age: 2))])
        #expect(changes.received == [.add(key: "k")])
        token.cancel()
        storageToken.cancel()
    }

    @Test("bytes that no longer decode fail the update with decodingFailed and are kept")
    func undecodableValueIsKept() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        try data.setObject(Data("not json".utf8), forKey: "k")
        #expect(storageError { _ = try storage.update(forKey: "k", default: User(name: "d", age: 0)) { $0.age += 1 } }?.isDecodingFailed == true)
        #expect(try data.object(forKey: "k") == Data("not json".utf8))
    }

    @Test("DiskStorage updates alone; a canonically equivalent spelling updates the same key")
    func diskStorageAndEquivalentKeys() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try disk.update(forKey: "caf\u{E9}", default: 0) { $0 += 1 }
        try disk.update(forKey: "cafe\u{301}", default: 0) { $0 += 1 }
        #expect(try disk.object(forKey: "caf\u{E9}") == 2)
        #expect(disk.allKeys.count == 1)
    }

    @Test("a read-only storage refuses an update before running its body")
    func readOnlyRefuses() throws {
        let directory = TemporaryDirectory()
        do {
            let writer = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
            try writer.setObject(1, forKey: "k")
        }
        var config = directory.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forCodable(ofType: Int.self))
        let ran = Recorder<Int>()
        #expect(storageError { _ = try reader.update(forKey: "k") { ran.append($0) } }?.isReadOnly == true)
        #expect(ran.received.isEmpty)
    }

    @Test("async/await and completion-handler updates return the new value")
    func asyncUpdates() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        #expect(try await storage.async.update(forKey: "n", default: 0) { $0 += 1 } == 1)
        let result = await withCheckedContinuation { continuation in
            storage.async.update(forKey: "n", default: 0, { $0 += 10 }) { continuation.resume(returning: $0) }
        }
        #expect(try result.get() == 11)
        #expect(try storage.object(forKey: "n") == 11)
    }

    @Test("a value in a file of its own is updated and its old file goes")
    func valueFiles() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, valuesAsFiles: true)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let before = try #require(try storage.entry(forKey: "k").filePath)
        try storage.update(forKey: "k") { $0.age = 2 }
        let after = try #require(try storage.entry(forKey: "k").filePath)
        #expect(before != after)
        #expect(!FileManager.default.fileExists(atPath: before))
        // The transformer's bytes, as they are (Contract item 9): JSON that Foundation reads back.
        #expect(try JSONDecoder().decode(User.self, from: Data(contentsOf: URL(fileURLWithPath: after))) == User(name: "a", age: 2))
    }

    @Test("an update of a value held in memory appends its record alone; a read from memory still counts as use")
    func memoryReadIsNoSeparateUse() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let engine = storage.hybridStorage.engine
        func appended(_ body: () throws -> Void) rethrows -> Int {
            let start = engine.sync { $0.log.active?.length ?? 0 }
            try body()
            return engine.sync { $0.log.active?.length ?? 0 } - start
        }
        let write = try appended { try storage.setObject(User(name: "a", age: 2), forKey: "k") }
        // The update's read is no access record of its own: its write records the key's time of use.
        #expect(try appended { try storage.update(forKey: "k") { $0.age = 3 } } == write)
        #expect(try storage.object(forKey: "k").age == 3)
        // A plain read from memory is one: the next write carries it.
        #expect(try appended { try storage.setObject(User(name: "a", age: 4), forKey: "k") } > write)
    }
}

extension StorageError {
    var isReadOnly: Bool { if case .readOnly = self { true } else { false } }
}
