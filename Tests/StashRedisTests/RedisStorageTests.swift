import Foundation
import Testing
import Stash
@testable import StashRedis

struct Profile: Codable, Sendable, Equatable {
    var name: String
    var visits: Int
}

@Suite("Redis storage", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct RedisStorageTests {
    private func storage(_ server: RedisServer, namespace: String = "profiles") throws -> RedisStorage<Profile> {
        try RedisStorage(configuration: server.configuration, namespace: namespace,
                         transformer: TransformerFactory.forCodable(ofType: Profile.self))
    }

    // MARK: Values and keys

    @Test("a value round-trips, and Redis holds exactly the transformer's bytes under namespace:key")
    func storesTransformerBytes() throws {
        let server = try RedisServer()
        let store = try storage(server)
        let profile = Profile(name: "Ada", visits: 3)
        try store.setObject(profile, forKey: "ada")
        #expect(try store.object(forKey: "ada") == profile)
        #expect(try store.existsObject(forKey: "ada"))
        let raw = try server.client().send(["GET", "profiles:ada"]).data
        #expect(try JSONDecoder().decode(Profile.self, from: raw ?? Data()) == profile, "plain JSON, no wrapper")
        let image = try RedisStorage(configuration: server.configuration, namespace: "img", transformer: TransformerFactory.forData())
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0, 255, 13, 10])
        try image.setObject(png, forKey: "a.png")
        #expect(try server.client().send(["GET", "img:a.png"]).data == png)
    }

    @Test("a missing key is notFound; a removed key is gone; removing a missing key is no error")
    func missingAndRemoved() throws {
        let server = try RedisServer()
        let store = try storage(server)
        #expect(throws: StorageError.self) { try store.object(forKey: "nobody") }
        #expect(try !store.existsObject(forKey: "nobody"))
        try store.setObject(Profile(name: "B", visits: 1), forKey: "b")
        try store.removeObject(forKey: "b")
        try store.removeObject(forKey: "b")
        #expect(try !store.existsObject(forKey: "b"))
    }

    @Test("canonically equivalent keys are one key, as Swift strings compare")
    func canonicalKeys() throws {
        let server = try RedisServer()
        let store = try storage(server)
        try store.setObject(Profile(name: "x", visits: 1), forKey: "caf\u{E9}")
        #expect(try store.object(forKey: "cafe\u{301}").name == "x")
        #expect(store.allKeys == ["caf\u{E9}"])
    }

    @Test("bytes that do not decode are decodingFailed, and the value stays for a view that can read them")
    func decodingFailureKeepsValue() throws {
        let server = try RedisServer()
        let store = try storage(server)
        let raw = store.transform(transformer: TransformerFactory.forData())
        try raw.setObject(Data("not json".utf8), forKey: "k")
        #expect { try store.object(forKey: "k") } throws: { error in
            if case StorageError.decodingFailed = error { return true } else { return false }
        }
        #expect(try raw.object(forKey: "k") == Data("not json".utf8))
    }

    @Test("an empty namespace is refused up front")
    func emptyNamespace() throws {
        let server = try RedisServer()
        #expect(throws: StorageError.self) { try storage(server, namespace: "") }
    }

    // MARK: Expiry

    @Test("expiry becomes Redis's PXAT, entry(forKey:) reports it, and a per-call expiry overrides the default")
    func expiryIsRedisExpiry() throws {
        let server = try RedisServer()
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000)
        let store = try RedisStorage(configuration: server.configuration, namespace: "p", expiry: .seconds(600),
                                     transformer: TransformerFactory.forCodable(ofType: Profile.self), now: { start })
        try store.setObject(Profile(name: "a", visits: 1), forKey: "default")
        try store.setObject(Profile(name: "a", visits: 1), forKey: "hour", expiry: .seconds(3600))
        try store.setObject(Profile(name: "a", visits: 1), forKey: "forever", expiry: .never)
        #expect(try store.entry(forKey: "default").expiry == .date(start + 600))
        #expect(try store.entry(forKey: "hour").expiry == .date(start + 3600))
        #expect(try store.entry(forKey: "forever").expiry == .never)
        let milliseconds = try server.client().send(["PEXPIRETIME", "p:hour"]).integer
        #expect(milliseconds == Int64((start.timeIntervalSince1970 + 3600) * 1000))
    }

    @Test("a value written already expired is not stored (Redis would drop it at once)")
    func expiredOnArrival() throws {
        let server = try RedisServer()
        let store = try storage(server)
        try store.setObject(Profile(name: "a", visits: 1), forKey: "k")
        try store.setObject(Profile(name: "a", visits: 2), forKey: "k", expiry: .date(Date(timeIntervalSince1970: 1)))
        #expect(throws: StorageError.self) { try store.entry(forKey: "k") }
        #expect(try server.client().send(["EXISTS", "profiles:k"]) == .integer(0))
    }

    // MARK: Namespaces

    @Test("allKeys lists the namespace with SCAN; removeAll removes only the namespace, even one with glob characters")
    func namespaceIsolation() throws {
        let server = try RedisServer()
        let store = try storage(server, namespace: "a*[b]")
        let other = try storage(server, namespace: "a")
        for index in 0..<2_500 { try store.setObject(Profile(name: "n", visits: index), forKey: "k\(index)") }
        try other.setObject(Profile(name: "o", visits: 0), forKey: "kept")
        try server.client().send(["SET", "unrelated", "x"])
        #expect(Set(store.allKeys) == Set((0..<2_500).map { "k\($0)" }))
        #expect(other.allKeys == ["kept"])
        try store.removeAll()
        #expect(store.allKeys.isEmpty)
        #expect(try other.object(forKey: "kept").name == "o")
        #expect(try server.client().send(["GET", "unrelated"]).string == "x")
    }

    // MARK: Async

    @Test("the async API: completion handlers and async/await, in submission order")
    func asyncAPI() async throws {
        let server = try RedisServer()
        let store = try storage(server)
        try await store.async.setObject(Profile(name: "a", visits: 1), forKey: "k")
        #expect(try await store.async.object(forKey: "k").visits == 1)
        let done = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            store.async.setObject(Profile(name: "a", visits: 2), forKey: "k") { _ in }
            store.async.object(forKey: "k") { result in continuation.resume(returning: (try? result.get().visits) ?? -1) }
        }
        #expect(done == 2)
        #expect(try await store.async.allKeys() == ["k"])
        try await store.async.removeAll()
        #expect(try await !store.async.existsObject(forKey: "k"))
    }

    // MARK: Observers

    @Test("observers see changes made through the store and its views, with the replaced value")
    func observers() async throws {
        let server = try RedisServer()
        let store = try storage(server)
        final class Watcher: Sendable {}
        let watcher = Watcher()
        let seen = Recorder<String>()
        store.addStorageObserver(watcher) { _, _, change in seen.append("\(change)") }
        store.addObserver(watcher, forKey: "k") { _, _, change in
            switch change {
            case .edit(let before, let after): seen.append("edit \(before?.visits ?? -1)->\(after.visits)")
            case .remove: seen.append("remove")
            }
        }
        try store.setObject(Profile(name: "a", visits: 1), forKey: "k")
        try store.setObject(Profile(name: "a", visits: 2), forKey: "k")
        try store.removeObject(forKey: "k")
        try store.removeAll()
        store.observers.waitUntilDelivered()
        #expect(seen.received == ["add(key: \"k\")", "edit -1->1", "add(key: \"k\")", "edit 1->2", "remove(key: \"k\")", "remove", "removeAll"])
    }

    // MARK: Failures

    @Test("Redis down: StorageError.io with the RedisError cause, within the timeout, then recovery by itself")
    func downThenRecovers() throws {
        let server = try RedisServer()
        let store = try storage(server)
        try store.setObject(Profile(name: "a", visits: 1), forKey: "k")
        server.kill()
        let start = ContinuousClock.now
        #expect { try store.object(forKey: "k") } throws: { error in
            guard case StorageError.io(_, _, let cause) = error else { return false }
            return cause is RedisError
        }
        #expect { try store.setObject(Profile(name: "a", visits: 2), forKey: "k") } throws: { error in
            if case StorageError.io = error { return true } else { return false }
        }
        // Less than one command timeout (`TestDeadline.long` in the test configuration): the errors came from
        // the refused connection at once, not from waiting for a timeout; no tight window for a loaded machine.
        #expect(ContinuousClock.now - start < .seconds(server.configuration.commandTimeout))
        try server.start()
        try eventually { try store.setObject(Profile(name: "b", visits: 3), forKey: "k") }
        #expect(try store.object(forKey: "k").visits == 3)
    }
}
