import Foundation
import Testing
import Stash
@testable import StashRedis

/// What a server developer meets when Redis refuses, stalls or is gone: backoff, clear errors, and
/// no needless flush of the near cache.
@Suite("Redis failures a server developer meets", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct ConnectionFailureTests {
    @Test("an idle near cache with a wrong password backs off instead of storming the server, and says why")
    func wrongPasswordBacksOff() throws {
        let server = try RedisServer(["--requirepass", "secret"])
        var config = server.configuration
        config.password = "wrong"
        config.initialBackoff = 0.02
        config.maximumBackoff = 0.4
        var side = server.configuration
        side.password = "secret"
        let before = try RedisClient(configuration: side).send(["INFO", "stats"]).string ?? ""
        let store = try RedisHybridStorage(configuration: config, namespace: "n", transformer: NearCacheTests.intTransformer)
        // A rate needs wall time: 1.5 s of an idle near cache. With a fixed 20 ms retry it would be ~75 attempts;
        // doubling from 20 ms to 400 ms allows 0.02+0.04+…+0.4 ≈ 1.2 s for the first 6, then one per 0.4 s.
        Thread.sleep(forTimeInterval: 1.5)
        let after = try RedisClient(configuration: side).send(["INFO", "stats"]).string ?? ""
        let attempts = Self.number("total_connections_received", after) - Self.number("total_connections_received", before) - 1
        #expect(attempts <= 12, "\(attempts) connection attempts in 1.5 s")
        guard case .authenticationFailed(let user, let serverURL, let reply) = store.coherenceError else {
            Issue.record("coherenceError: \(String(describing: store.coherenceError))")
            return
        }
        #expect(user == "default" && serverURL == config.displayURL && reply.hasPrefix("WRONGPASS"))
        #expect(!store.isMemoryCoherent)
        // A call names the problem too, during the pause as after it.
        do {
            _ = try store.object(forKey: "k")
            Issue.record("a read with a wrong password succeeded")
        } catch StorageError.io(_, _, let cause as RedisError) {
            #expect("\(cause)".contains("refused user 'default'"), "\(cause)")
        }
    }

    @Test("no password where one is required reads as an authentication failure, not an outage")
    func missingPassword() throws {
        let server = try RedisServer(["--requirepass", "secret"])
        let client = RedisClient(configuration: server.configuration)
        #expect { try client.send(["PING"]) } throws: { error in
            guard case .authenticationFailed(_, _, let reply) = error as? RedisError else { return false }
            return reply.hasPrefix("NOAUTH")
        }
    }

    @Test("waiting for a free pooled connection times out without flushing the near cache's memory")
    func poolWaitKeepsMemory() throws {
        let server = try RedisServer()
        _ = try server.client().pipeline([["SET", "n:k", "1"], ["SET", "n:j", "2"]])
        var config = server.configuration
        config.poolSize = 1
        config.commandTimeout = 0.3
        let store = try RedisHybridStorage(configuration: config, namespace: "n", transformer: NearCacheTests.intTransformer, heartbeat: 600)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        #expect(try store.object(forKey: "k") == 1)
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            try? store.redisStorage.client.pool.withConnection { _ in
                held.signal()
                _ = release.wait(timeout: TestDeadline.fromNow)
            }
        }
        held.wait()
        do {
            _ = try store.object(forKey: "j")
            Issue.record("a read got a connection the pool did not have")
        } catch StorageError.io(_, _, let cause as RedisError) {
            #expect(cause == .noFreeConnection(seconds: 0.3, poolSize: 1))
        }
        release.signal()
        #expect(store.memoryStorage.count == 1, "memory kept: a busy pool says nothing about coherence")
        #expect(store.isMemoryCoherent)
        #expect(store.coherence.listener.connections == 1, "tracking was not restarted")
    }

    @Test("errors name the server in the operation and the Redis key in the path")
    func errorsNameServerAndKey() throws {
        let server = try RedisServer()
        let store = try RedisStorage(configuration: server.configuration, namespace: "app:v2", transformer: NearCacheTests.intTransformer)
        server.kill()
        do {
            _ = try store.object(forKey: "me")
            Issue.record("a read from a dead server succeeded")
        } catch StorageError.io(let operation, let path, _) {
            #expect(operation == "Redis GET on \(server.configuration.displayURL)")
            #expect(path == "app%3Av2:me")
        }
    }

    @Test("listing keys during an outage is an error (keys(), async allKeys()), not an empty list")
    func listingDuringOutageThrows() async throws {
        let server = try RedisServer()
        let store = try RedisHybridStorage(configuration: server.configuration, namespace: "n", transformer: NearCacheTests.intTransformer)
        try store.setObject(1, forKey: "k")
        #expect(try store.keys() == ["k"])
        server.kill()
        #expect(throws: StorageError.self) { try store.keys() }
        await #expect(throws: StorageError.self) { try await store.async.allKeys() }
        let viaCompletion = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            store.async.allKeys { continuation.resume(returning: (try? $0.get()) == nil) }
        }
        #expect(viaCompletion)
        #expect(store.allKeys.isEmpty, "the protocol's non-throwing property is documented as empty on failure")
    }

    @Test("the password changed on a running server: authenticated connections go on, new ones name the problem, the old password back recovers")
    func passwordChangedWhileRunning() throws {
        let server = try RedisServer(["--requirepass", "old"])
        var config = server.configuration
        config.password = "old"
        let store = try RedisHybridStorage(configuration: config, namespace: "n", transformer: NearCacheTests.intTransformer)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        try store.setObject(1, forKey: "k")
        var admin = config
        admin.poolSize = 1
        let side = RedisClient(configuration: admin)
        try side.send(["CONFIG", "SET", "requirepass", "new"])
        #expect(try store.object(forKey: "k") == 1, "connections made before the change stay authenticated")
        // The tracking connection breaks; it cannot come back with the old password.
        let list = try side.send(["CLIENT", "LIST"]).string ?? ""
        for line in list.split(separator: "\n") where line.contains("name=stash-invalidation") {
            if let id = line.split(separator: " ").first(where: { $0.hasPrefix("id=") })?.dropFirst(3) {
                try side.send(["CLIENT", "KILL", "ID", String(id)])
            }
        }
        let named = TestDeadline.poll {
            if case .authenticationFailed? = store.coherenceError { return true } else { return false }
        }
        #expect(named, "\(String(describing: store.coherenceError))")
        #expect(store.memoryStorage.count == 0 && !store.isMemoryCoherent, "no memory without invalidations")
        #expect(try store.object(forKey: "k") == 1, "reads go to Redis on the authenticated pooled connection")
        try side.send(["CONFIG", "SET", "requirepass", "old"])
        #expect(store.coherence.listener.waitUntilTracking(connections: 2, seconds: TestDeadline.long), "back within the backoff")
        #expect(store.coherenceError == nil)
    }

    static func number(_ name: String, _ info: String) -> Int {
        NearCacheTests.stat(name, info).flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1
    }
}
