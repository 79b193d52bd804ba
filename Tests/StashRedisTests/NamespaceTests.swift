import Foundation
import Testing
import Stash
@testable import StashRedis

/// A namespace owns exactly its keys, whatever characters it and its keys hold.
@Suite("Redis namespaces", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct NamespaceTests {
    private func store(_ server: RedisServer, _ namespace: String) throws -> RedisStorage<Int> {
        try RedisStorage(configuration: server.configuration, namespace: namespace, transformer: NearCacheTests.intTransformer)
    }

    @Test("namespace app does not list or remove the keys of app:v2")
    func extendingNamespaceIsSeparate() throws {
        let server = try RedisServer()
        let app = try store(server, "app")
        let v2 = try store(server, "app:v2")
        try app.setObject(1, forKey: "k")
        try v2.setObject(2, forKey: "k")
        try v2.setObject(3, forKey: "x")
        #expect(try app.keys() == ["k"])
        #expect(try Set(v2.keys()) == ["k", "x"])
        try app.removeAll()
        #expect(try v2.object(forKey: "k") == 2 && v2.object(forKey: "x") == 3)
    }

    @Test("namespace a + key b:c and namespace a:b + key c are two Redis keys")
    func splitPointsDoNotCollide() throws {
        let server = try RedisServer()
        let a = try store(server, "a")
        let ab = try store(server, "a:b")
        #expect(a.redisKey("b:c") != ab.redisKey("c"))
        try a.setObject(1, forKey: "b:c")
        try ab.setObject(2, forKey: "c")
        #expect(try a.object(forKey: "b:c") == 1)
        #expect(try ab.object(forKey: "c") == 2)
        // Escapes themselves cannot be forged: a namespace spelled like an escape is another namespace.
        let forged = try store(server, "a%3Ab")
        #expect(forged.keyPrefix != ab.keyPrefix)
        #expect(throws: StorageError.self) { try forged.object(forKey: "c") }
    }

    @Test("glob characters, backslashes and percent signs in a namespace are taken literally")
    func globCharacters() throws {
        let server = try RedisServer()
        let names = ["*", "a*", "a?", "[a]", "a\\", "a\\*", "%", "a%b", "^-"]
        let stores = try names.map { try store(server, $0) }
        for (index, store) in stores.enumerated() { try store.setObject(index, forKey: "k") }
        for (index, store) in stores.enumerated() {
            #expect(try store.keys() == ["k"], "namespace \(names[index])")
            #expect(try store.object(forKey: "k") == index)
        }
        try stores[0].removeAll()
        #expect(try stores[1].object(forKey: "k") == 1)
    }

    @Test("canonically equivalent namespaces are one namespace")
    func canonicalNamespaces() throws {
        let server = try RedisServer()
        let composed = try store(server, "caf\u{E9}")
        let decomposed = try store(server, "cafe\u{301}")
        try composed.setObject(1, forKey: "k")
        #expect(try decomposed.object(forKey: "k") == 1)
        #expect(try decomposed.keys() == ["k"])
    }

    @Test("a near cache of namespace app is not invalidated by, and never serves, app:v2's keys")
    func nearCacheOwnsItsPrefix() throws {
        let server = try RedisServer()
        let app = try RedisHybridStorage(configuration: server.configuration, namespace: "app", transformer: NearCacheTests.intTransformer)
        #expect(app.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        let v2 = try store(server, "app:v2")
        try v2.setObject(2, forKey: "k")
        #expect(throws: StorageError.self) { try app.object(forKey: "v2:k") }
        try app.setObject(1, forKey: "v2:k")
        #expect(try app.object(forKey: "v2:k") == 1)
        #expect(try v2.object(forKey: "k") == 2)
    }
}
