import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract items 1–3: absolute expiry, expired values not returned as valid, injectable time.
@Suite("Expiry through Storage")
struct ExpiryTests {
    // Contract 1: `.seconds(n)` is resolved to a date when the value is written.
    @Test("seconds expiry is fixed at write time and reading never moves it")
    func secondsExpiryIsAbsolute() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let writtenAt = clock.now
        try storage.setObject(User(name: "a", age: 1), forKey: "k", expiry: .seconds(60))

        for _ in 0..<5 {
            clock.advance(by: 10)
            #expect(try storage.entry(forKey: "k").expiry == .date(writtenAt + 60))
        }
        clock.advance(by: 10) // 60 s after the write
        #expect(storage.entryIsExpired("k"))
    }

    // Contract 1: the expiry is fixed on disk too, across a reopen.
    @Test("expiry survives a reopen unchanged")
    func expirySurvivesReopen() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let writtenAt = clock.now
        try makeUserStorage(in: directory, clock: clock).setObject(User(name: "a", age: 1), forKey: "k", expiry: .seconds(30))
        clock.advance(by: 20)
        let reopened = try makeUserStorage(in: directory, clock: clock)
        #expect(try reopened.entry(forKey: "k").expiry == .date(writtenAt + 30))
        #expect(try reopened.existsObject(forKey: "k"))
        clock.advance(by: 10)
        #expect(try !reopened.existsObject(forKey: "k"))
    }

    // Contract 1: a per-call expiry overrides the layer's default.
    @Test("a per-call expiry overrides DiskConfig.expiry")
    func perCallExpiryOverridesDefault() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, expiry: .seconds(10), clock: clock)
        try storage.setObject(User(name: "default", age: 1), forKey: "default")
        try storage.setObject(User(name: "long", age: 1), forKey: "long", expiry: .seconds(1000))
        try storage.setObject(User(name: "never", age: 1), forKey: "never", expiry: .never)
        clock.advance(by: 11)
        #expect(try !storage.existsObject(forKey: "default"))
        #expect(try storage.object(forKey: "long").name == "long")
        #expect(try storage.object(forKey: "never").name == "never")
        #expect(try storage.entry(forKey: "never").expiry == .never)
    }

    // Contract 2: expired values are not returned as valid, but `entry` flags and returns them.
    @Test("an expired value throws expired from object, is not existing, and entry returns it flagged")
    func expiredValueIsFlaggedNotReturned() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(User(name: "stale", age: 1), forKey: "k", expiry: .seconds(5))
        clock.advance(by: 6)

        for view in [storage, try makeUserStorage(in: directory, clock: clock)] { // memory hit and a cold instance
            let error = storageError { _ = try view.object(forKey: "k") }
            #expect(error?.isExpired == true)
            #expect(try !view.existsObject(forKey: "k"))
            #expect(try view.isExpiredObject(forKey: "k"))
            let entry = try view.entry(forKey: "k")
            #expect(entry.isExpired)
            #expect(entry.object.name == "stale")
        }
    }

    // Contract 2: expired values stay until removeExpiredObjects removes them.
    @Test("removeExpiredObjects removes exactly the expired values, from memory and disk")
    func removeExpiredObjectsRemovesOnlyExpired() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(User(name: "old", age: 1), forKey: "old", expiry: .seconds(5))
        try storage.setObject(User(name: "fresh", age: 2), forKey: "fresh", expiry: .seconds(500))
        clock.advance(by: 10)
        try storage.removeExpiredObjects()
        #expect(storageError { _ = try storage.entry(forKey: "old") }?.isNotFound == true)
        #expect(try storage.object(forKey: "fresh").name == "fresh")
        #expect(Set(storage.allKeys) == ["fresh"])
        #expect(try Set(makeUserStorage(in: directory, name: "store", clock: clock).allKeys) == ["fresh"])
    }

    // Contract 2: the async API applies the same rule.
    @Test("the async API throws expired and returns flagged entries too")
    func asyncExpiry() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try await storage.async.setObject(User(name: "a", age: 1), forKey: "k", expiry: .seconds(1))
        clock.advance(by: 2)
        await #expect(throws: StorageError.self) { try await storage.async.object(forKey: "k") }
        #expect(try await storage.async.entry(forKey: "k").isExpired)
        #expect(try await !storage.async.existsObject(forKey: "k"))
    }

    // Contract 3: every layer reads the injected clock (no layer calls Date() itself).
    @Test("memory, disk and hybrid layers all read the injected clock")
    func everyLayerUsesInjectedClock() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock(Date(timeIntervalSince1970: 0)) // far in the past: Date() would say expired
        let transformer = TransformerFactory.forCodable(ofType: User.self)
        let memory = MemoryStorage<User>(now: clock.function)
        let disk = try DiskStorage(config: directory.diskConfig("disk"), transformer: transformer, now: clock.function)
        let storage = try makeUserStorage(in: directory, clock: clock)
        let user = User(name: "a", age: 1)
        let layers: [any StorageAware<User>] = [memory, disk, storage]
        for layer in layers {
            try layer.setObject(user, forKey: "k", expiry: .date(Date(timeIntervalSince1970: 100)))
            #expect(try layer.existsObject(forKey: "k"), "\(type(of: layer)) must not use the real clock")
        }
        clock.advance(by: 100)
        for layer in layers {
            #expect(try !layer.existsObject(forKey: "k"))
            #expect(try layer.entry(forKey: "k").isExpired)
        }
        #expect(disk.entryInfos.first?.lastAccess == Date(timeIntervalSince1970: 100))
    }
}

extension Storage {
    fileprivate func entryIsExpired(_ key: String) -> Bool {
        (try? entry(forKey: key).isExpired) ?? false
    }
}
