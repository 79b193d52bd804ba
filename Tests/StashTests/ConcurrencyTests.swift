import Dispatch
import Foundation
import Testing
@testable import Stash

/// Contract item 4: one serial queue per store; callbacks never on it; no deadlock on re-entry.
@Suite("Queue discipline and concurrency")
struct ConcurrencyTests {
    // Contract 4: completion handlers never run on the store's queue, and may call the storage.
    @Test("completion handlers run off the store's queue and can call the storage synchronously")
    func completionsRunOffQueue() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let engine = storage.hybridStorage.engine
        let name: String = try await withCheckedThrowingContinuation { continuation in
            storage.async.setObject(User(name: "a", age: 1), forKey: "k") { result in
                #expect(!engine.isOnQueue)
                // A synchronous call from inside the completion must not deadlock.
                continuation.resume(with: result.flatMap { Result { try storage.object(forKey: "k").name } })
            }
        }
        #expect(name == "a")
    }

    // Contract 4: a sync call made from the queue itself (inside a transformer) runs inline.
    @Test("a transformer that calls the storage synchronously does not deadlock")
    func reentrantCallFromTransformer() throws {
        let directory = TemporaryDirectory()
        let box = StorageBox()
        let transformer = Transformer<String>(
            toData: { value in
                // Runs on the store's queue when called from setObject… and reads the store.
                _ = box.storage?.allKeys
                _ = try? box.storage?.existsObject(forKey: "other")
                return Data(value.utf8)
            },
            fromData: { data in
                _ = try? box.storage?.existsObject(forKey: "other")
                return String(decoding: data, as: UTF8.self)
            }
        )
        let storage = try Storage<String>(diskConfig: directory.diskConfig(), transformer: transformer)
        box.storage = storage
        try storage.setObject("value", forKey: "k")
        let cold = try Storage<String>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 1), transformer: transformer)
        box.storage = cold
        try cold.setObject("x", forKey: "evicts-k-from-memory")
        #expect(try cold.object(forKey: "k") == "value") // decoded on the queue, calling back in
    }

    // Contract 4: async operations run in submission order with sync ones (one queue).
    @Test("async writes are applied in submission order and a later sync read sees them")
    func asyncOrder() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        for age in 0..<200 { storage.async.setObject(User(name: "n", age: age), forKey: "k") { _ in } }
        let last = try await storage.async.object(forKey: "k") // queued after every write above
        #expect(last.age == 199)
        #expect(try storage.object(forKey: "k").age == 199)
    }

    // Contract 4 (acceptance 4): sync calls, async calls, two typed views and observers from several
    // threads for a bounded time: no deadlock, no lost write, views agree.
    @Test("mixed sync, async, typed-view and observer traffic from many threads loses nothing")
    func mixedStress() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: 16))
        let dataView = storage.transformData()
        let codableView = storage.transformCodable(ofType: User.self)
        let observer = CountingObserver()
        storage.addStorageObserver(observer) { observer, storage, change in
            observer.count(change)
            if case .add(let key) = change { _ = try? storage.existsObject(forKey: key) } // re-entry from an observer
        }
        let threads = 4
        let rounds = 300
        let deadline = Date().addingTimeInterval(20) // bounded even on a slow machine
        let asyncWrites = AsyncCounter()
        let mismatches = Mismatches() // #expect is not called from Dispatch threads

        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<rounds where Date() < deadline {
                let key = "t\(thread)-\(round % 20)"
                let user = User(name: key, age: round)
                switch round % 5 {
                case 0: try? storage.setObject(user, forKey: key)
                case 1: try? codableView.setObject(user, forKey: key)
                case 2:
                    asyncWrites.start()
                    storage.async.setObject(user, forKey: key) { _ in asyncWrites.finish() }
                case 3: try? dataView.setObject(JSONEncoder().encode(user), forKey: key)
                default: _ = try? storage.object(forKey: "t\((thread + 1) % threads)-\(round % 20)")
                }
                // Each thread owns its keys: whatever it wrote last it must read back (sync writes).
                if round % 5 != 2, round % 5 != 4 {
                    if (try? codableView.object(forKey: key).age) != round { mismatches.record("\(key) at \(round)") }
                    // JSONEncoder's key order is not stable, so compare raw bytes decoded.
                    if (try? JSONDecoder().decode(User.self, from: dataView.object(forKey: key))) != user { mismatches.record("raw \(key)") }
                }
            }
        }
        #expect(mismatches.all.isEmpty)
        await asyncWrites.waitForAll()
        storage.waitForQueue()
        storage.waitForObservers()

        // The last write of every key is what all views read.
        var written = 0
        for thread in 0..<threads {
            for slot in 0..<20 {
                let key = "t\(thread)-\(slot)"
                guard let lastRound = (0..<rounds).last(where: { $0 % 20 == slot && $0 % 5 != 4 }) else { continue }
                written += 1
                let user = try storage.object(forKey: key)
                #expect(user.age == lastRound, "key \(key)")
                #expect(try JSONDecoder().decode(User.self, from: dataView.object(forKey: key)) == user)
            }
        }
        #expect(observer.adds == threads * rounds * 4 / 5)
        #expect(storage.allKeys.count == written)
    }
}

/// Lets a transformer reach the storage it belongs to.
private final class StorageBox: @unchecked Sendable {
    // @unchecked Sendable: set once before any concurrent use in these single-threaded tests.
    var storage: Storage<String>?
}

/// Counts storage changes delivered to it.
private final class CountingObserver: @unchecked Sendable {
    // @unchecked Sendable: `adds` is only touched under `lock`.
    private let lock = NSLock()
    private var addCount = 0

    func count(_ change: StorageChange) {
        guard case .add = change else { return }
        lock.lock()
        addCount += 1
        lock.unlock()
    }

    var adds: Int {
        lock.lock()
        defer { lock.unlock() }
        return addCount
    }
}

/// Collects failures seen on worker threads.
private final class Mismatches: @unchecked Sendable {
    // @unchecked Sendable: `list` is only touched under `lock`.
    private let lock = NSLock()
    private var list: [String] = []
    func record(_ message: String) {
        lock.lock()
        list.append(message)
        lock.unlock()
    }
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return list
    }
}

/// Counts async operations in flight, and waits for them without sleeping.
private final class AsyncCounter: @unchecked Sendable {
    // @unchecked Sendable: the group is thread-safe.
    private let group = DispatchGroup()
    func start() { group.enter() }
    func finish() { group.leave() }
    func waitForAll() async {
        await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
    }
}
