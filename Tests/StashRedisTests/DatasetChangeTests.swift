import Foundation
import Testing
import Stash
@testable import StashRedis

/// Whole-dataset changes on a real server: which ones the near cache notices, and how soon.
@Suite("Redis near cache and whole-dataset changes", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct DatasetChangeTests {
    private func nearCache(_ server: RedisServer, heartbeat: TimeInterval) throws -> RedisHybridStorage<Int> {
        let store = try RedisHybridStorage(configuration: server.configuration, namespace: "n",
                                           transformer: NearCacheTests.intTransformer, heartbeat: heartbeat)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        return store
    }

    /// Reads `key` until it is `expected` (bounded by `TestDeadline.long`); the last value read.
    private func readUntil(_ expected: Int, _ key: String, from store: RedisHybridStorage<Int>) -> Int? {
        var last: Int?
        _ = TestDeadline.poll {
            last = try? store.object(forKey: key)
            return last == expected
        }
        return last
    }

    /// Reads `key` until it is gone (bounded as ``readUntil(_:_:from:)``).
    private func readUntilMissing(_ key: String, from store: RedisHybridStorage<Int>) -> Bool {
        TestDeadline.poll { (try? store.object(forKey: key)) == nil }
    }

    @Test("SWAPDB, which Redis announces to no tracking client, is noticed by the heartbeat's generation check")
    func swapNoticedByHeartbeat() throws {
        let server = try RedisServer()
        try server.client().send(["SET", "n:k", "1"])
        _ = try server.client().pipeline([["SELECT", "1"], ["SET", "n:k", "2"]])
        let store = try nearCache(server, heartbeat: 0.1)
        #expect(try store.object(forKey: "k") == 1)
        #expect(store.memoryStorage.count == 1)
        try server.client().send(["SWAPDB", "0", "1"])
        // Memory hits only from here on: the heartbeat alone must notice the swap.
        #expect(readUntil(2, "k", from: store) == 2, "the near cache served database 1's old value after SWAPDB")
    }

    @Test("after SWAPDB, the next read from Redis flushes memory at once (no heartbeat needed)")
    func swapNoticedByNextRead() throws {
        let server = try RedisServer()
        _ = try server.client().pipeline([["SET", "n:k", "1"], ["SET", "n:j", "1"]])
        _ = try server.client().pipeline([["SELECT", "1"], ["SET", "n:k", "2"], ["SET", "n:other", "7"]])
        let store = try nearCache(server, heartbeat: 600)
        #expect(try store.object(forKey: "k") == 1)
        try server.client().send(["SWAPDB", "0", "1"])
        #expect(try store.object(forKey: "other") == 7, "a miss goes to Redis and sees the new generation")
        #expect(store.memoryStorage.count == 0)
        #expect(try store.object(forKey: "k") == 2)
        // And nothing read under the new generation is admitted until the listener adopts it: still coherent.
        #expect(try store.object(forKey: "k") == 2)
    }

    @Test("FLUSHALL, FLUSHDB ASYNC and a swap back and forth leave no stale memory")
    func flushesAndDoubleSwap() throws {
        let server = try RedisServer()
        let store = try nearCache(server, heartbeat: 0.1)
        try server.client().send(["SET", "n:k", "1"])
        #expect(readUntil(1, "k", from: store) == 1)
        try server.client().send(["FLUSHALL"])
        #expect(readUntilMissing("k", from: store), "FLUSHALL: the key is gone for the near cache too")
        try server.client().send(["SET", "n:k", "3"])
        #expect(readUntil(3, "k", from: store) == 3)
        try server.client().send(["FLUSHDB", "ASYNC"])
        #expect(readUntilMissing("k", from: store))
        // The generation key is recreated after a flush: a later swap is noticed again.
        try server.client().send(["SET", "n:k", "4"])
        _ = try server.client().pipeline([["SELECT", "2"], ["SET", "n:k", "5"]])
        #expect(readUntil(4, "k", from: store) == 4)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        try server.client().send(["SWAPDB", "0", "2"])
        #expect(readUntil(5, "k", from: store) == 5)
        try server.client().send(["SWAPDB", "0", "2"])
        #expect(readUntil(4, "k", from: store) == 4)
    }

    @Test("a user whose ACL forbids the generation key still gets a coherent near cache (swaps then go unnoticed)")
    func generationKeyForbidden() throws {
        let server = try RedisServer(["--user", "app", "on", ">s3cret", "~n:*", "&*", "+@all", "--requirepass", "other"])
        var config = server.configuration
        config.username = "app"
        config.password = "s3cret"
        let a = try RedisHybridStorage(configuration: config, namespace: "n", transformer: NearCacheTests.intTransformer)
        let b = try RedisStorage(configuration: config, namespace: "n", transformer: NearCacheTests.intTransformer)
        #expect(a.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        try b.setObject(1, forKey: "k")
        #expect(readUntil(1, "k", from: a) == 1)
        try b.setObject(2, forKey: "k")
        #expect(readUntil(2, "k", from: a) == 2)
        #expect(!a.coherence.listener.readsGeneration)
    }
}

/// Servers that cannot take the generation key: the near cache must still work.
@Suite("Redis near cache on servers that refuse writes", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct RefusingServerTests {
    @Test("a full server (maxmemory, noeviction) refuses the generation's SET: memory is still used")
    func fullServer() throws {
        let server = try RedisServer()
        try server.client().send(["SET", "n:k", "1"])
        try server.client().send(["CONFIG", "SET", "maxmemory", "1"]) // every write is now refused with OOM
        #expect(throws: (any Error).self) { try server.client().send(["SET", "x", "1"]) }
        let store = try RedisHybridStorage(configuration: server.configuration, namespace: "n",
                                           transformer: NearCacheTests.intTransformer)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long), "\(String(describing: store.coherenceError))")
        #expect(try store.object(forKey: "k") == 1)
        #expect(store.memoryStorage.count == 1, "the value was admitted to memory")
    }
}
