import Foundation
import Testing
import Stash
@testable import StashRedis

/// The async API of the Redis stores: independent callers run concurrently, memory hits answer at
/// once, and calls on one key keep their submission order.
@Suite("Redis async API concurrency", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct ConcurrentAsyncTests {
    /// Values are decimal text; decoding the text "block" waits until `gate` opens (at most `TestDeadline.long`: on
    /// a serialising API the test fails after that, rather than hang).
    private static func blockingTransformer(_ gate: DispatchSemaphore) -> Transformer<Int> {
        Transformer(toData: { Data(String($0).utf8) }, fromData: { data in
            let text = String(decoding: data, as: UTF8.self)
            if text == "block" {
                _ = gate.wait(timeout: TestDeadline.fromNow) // long: on a loaded machine the other call may wait for a thread
                return -1
            }
            return Int(text) ?? -2
        })
    }

    @Test("an async read of another key does not wait behind a call that is still running")
    func independentCallersAreNotSerialised() async throws {
        let server = try RedisServer()
        _ = try server.client().pipeline([["SET", "p:slow", "block"], ["SET", "p:fast", "1"]])
        let gate = DispatchSemaphore(value: 0)
        let store = try RedisStorage(configuration: server.configuration, namespace: "p", transformer: Self.blockingTransformer(gate))
        let slowDone = Locked(false)
        store.async.entry(forKey: "slow") { _ in slowDone.withLock { $0 = true } }
        // No time bound (the machine may be loaded): the slow read runs until the gate opens.
        #expect(try await store.async.entry(forKey: "fast").object == 1)
        #expect(!slowDone.withLock { $0 }, "the fast read finished while the slow one still ran")
        gate.signal()
    }

    @Test("a near cache's async memory hit does not wait behind another caller's Redis call")
    func memoryHitDoesNotWait() async throws {
        let server = try RedisServer()
        _ = try server.client().pipeline([["SET", "n:slow", "block"], ["SET", "n:k", "1"]])
        let gate = DispatchSemaphore(value: 0)
        let store = try RedisHybridStorage(configuration: server.configuration, namespace: "n",
                                           transformer: Self.blockingTransformer(gate), heartbeat: 600)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        #expect(try store.object(forKey: "k") == 1)
        let done = Locked(false)
        store.async.object(forKey: "slow") { _ in done.withLock { $0 = true } }
        #expect(try await store.async.object(forKey: "k") == 1)
        let hit = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            store.async.object(forKey: "k") { continuation.resume(returning: (try? $0.get()) ?? -3) }
        }
        #expect(hit == 1, "a completion handler's memory hit does not wait either")
        #expect(!done.withLock { $0 })
        gate.signal()
    }

    @Test("with the server frozen (SIGSTOP), an async memory hit still answers at once")
    func memoryHitWhileServerFrozen() async throws {
        let server = try RedisServer()
        try server.client().send(["SET", "n:k", "1"])
        let store = try RedisHybridStorage(configuration: server.configuration, namespace: "n",
                                           transformer: NearCacheTests.intTransformer, heartbeat: 600)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        #expect(try store.object(forKey: "k") == 1)
        server.pause()
        defer { server.resume() }
        let missDone = Locked(false)
        store.async.object(forKey: "absent") { _ in missDone.withLock { $0 = true } } // waits for the frozen server
        let start = ContinuousClock.now
        #expect(try await store.async.object(forKey: "k") == 1)
        let elapsed = ContinuousClock.now - start
        // The miss waits for the frozen server (its timeout is `TestDeadline.long`, so it is still
        // waiting however slow the machine); the hit must not.
        #expect(!missDone.withLock { $0 }, "the memory hit waited for the miss (\(elapsed))")
    }

    @Test("calls on one key keep their submission order; a removeAll waits for the writes before it")
    func sameKeyOrderKept() async throws {
        let server = try RedisServer()
        let store = try RedisStorage(configuration: server.configuration, namespace: "o", transformer: NearCacheTests.intTransformer)
        let results = await withCheckedContinuation { (continuation: CheckedContinuation<[Int], Never>) in
            let collected = LockedValues()
            for round in 0..<50 {
                store.async.setObject(round, forKey: "k\(round % 5)") { _ in }
                store.async.object(forKey: "k\(round % 5)") { result in
                    if collected.append((try? result.get()) ?? -1, expected: round) == 50 { continuation.resume(returning: collected.mismatches) }
                }
            }
        }
        #expect(results.isEmpty, "reads that did not see the write submitted just before them: \(results)")
        let removed = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            for index in 0..<20 { store.async.setObject(index, forKey: "w\(index)") { _ in } }
            store.async.removeAll { _ in continuation.resume(returning: true) }
        }
        #expect(removed)
        #expect(try await store.async.allKeys().isEmpty)
    }

    @Test("completion handlers and transformers that call back into the store, from 8 threads, on a pool of 1")
    func reentrantCallsFinish() async throws {
        let server = try RedisServer()
        var config = server.configuration
        config.poolSize = 1
        let store = try RedisHybridStorage(configuration: config, namespace: "r", transformer: NearCacheTests.intTransformer)
        #expect(store.coherence.listener.waitUntilTracking(connections: 1, seconds: TestDeadline.long))
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let count = LockedValues()
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for round in 0..<10 {
                    let key = "k\(thread)"
                    store.async.setObject(round, forKey: key) { _ in
                        // Inside a completion handler: the sync API, then the async API again.
                        let now = (try? store.object(forKey: key)) ?? -1
                        store.async.object(forKey: key) { result in
                            let again = (try? result.get()) ?? -1
                            if count.append(again >= now ? 1 : 0, expected: 1) == 80 { continuation.resume(returning: 80 - count.mismatches.count) }
                        }
                    }
                }
            }
        }
        #expect(finished == 80, "a later read returned an older value than an earlier one")
    }

    @Test("a completion handler that blocks holds up no later call, even on a pool of 1")
    func blockingCompletionHandler() async throws {
        let server = try RedisServer()
        var config = server.configuration
        config.poolSize = 1
        let store = try RedisStorage(configuration: config, namespace: "h", transformer: NearCacheTests.intTransformer)
        let release = DispatchSemaphore(value: 0)
        let released = Locked(false)
        store.async.setObject(1, forKey: "a") { _ in
            if release.wait(timeout: TestDeadline.fromNow) == .success { released.withLock { $0 = true } }
        }
        try await store.async.setObject(2, forKey: "b")
        #expect(try await store.async.object(forKey: "b") == 2)
        #expect(!released.withLock { $0 }, "the later calls finished while the first handler still blocked")
        release.signal()
    }

    @Test("many async callers on a pool of 2: all finish, at most 2 connections used")
    func boundedByPool() async throws {
        let server = try RedisServer()
        var config = server.configuration
        config.poolSize = 2
        let store = try RedisStorage(configuration: config, namespace: "b", transformer: NearCacheTests.intTransformer)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask {
                    try await store.async.setObject(index, forKey: "k\(index % 17)")
                    _ = try await store.async.existsObject(forKey: "k\(index % 17)")
                }
            }
            try await group.waitForAll()
        }
        let clients = try server.client().send(["CLIENT", "LIST"]).string ?? ""
        #expect(clients.split(separator: "\n").filter { $0.contains("name=stash ") }.count <= 3) // 2 + the side client
    }
}

/// Values appended from several threads, with the ones that differ from what was expected.
final class LockedValues: @unchecked Sendable {
    // @unchecked Sendable: every field is touched only under `lock`.
    private let lock = NSLock()
    private var count = 0
    private var wrong: [Int] = []
    /// Appends `value`; returns how many have been appended.
    func append(_ value: Int, expected: Int) -> Int {
        lock.withLock {
            count += 1
            if value != expected { wrong.append(value) }
            return count
        }
    }
    var mismatches: [Int] { lock.withLock { wrong } }
}
