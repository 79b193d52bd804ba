import Dispatch
import Foundation
import Testing
@testable import Stash
@testable import StashEngine

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

extension ConcurrencyTests {
    // Issue "reliability": writers and readers on every API while other threads run the maintenance
    // operations (removeAll, removeExpiredObjects, trimming by maxSize) and move the clock. Run under
    // ThreadSanitizer by .ci/run. Nothing may crash or deadlock; every value read belongs to its key;
    // the size limit holds at the end; every observed add was a write that succeeded.
    @Test("writers, readers, removeAll, removeExpiredObjects, trimming and a moving clock at once")
    func maintenanceUnderLoad() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let maxSize = 4_000
        let storage = try makeUserStorage(in: directory, expiry: .seconds(5), maxSize: maxSize,
                                          memory: MemoryConfig(countLimit: 32), clock: clock)
        let dataView = storage.transformData()
        let observer = CountingObserver()
        let token = storage.addStorageObserver(observer) { observer, _, change in observer.count(change) }
        let keyObserver = CountingObserver()
        let keyToken = storage.addObserver(keyObserver, forKey: "w0-1") { observer, _, change in
            if case .edit = change { observer.count(.add(key: "w0-1")) } // counted as the add it is
        }
        let writes = Mismatches(), wrongValues = Mismatches()
        let asyncWrites = AsyncCounter()
        let deadline = Date().addingTimeInterval(20) // bounded even on a slow machine

        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<400 where Date() < deadline {
                let key = "w\(thread % 2)-\(round % 12)"
                switch (thread, round % 6) {
                case (0...1, 0...2):
                    if (try? storage.setObject(User(name: key, age: round), forKey: key)) != nil { writes.record(key) }
                case (0...1, 3):
                    asyncWrites.start()
                    storage.async.setObject(User(name: key, age: round), forKey: key, expiry: .seconds(1)) { result in
                        if case .success = result { writes.record(key) }
                        asyncWrites.finish()
                    }
                case (0...1, _):
                    if let user = try? storage.object(forKey: key), user.name != key { wrongValues.record("\(key): \(user)") }
                    if let entry = try? storage.entry(forKey: key), entry.object.name != key { wrongValues.record("entry \(key)") }
                case (2, 0): try? storage.removeExpiredObjects()
                case (2, 1): clock.advance(by: 1)
                case (2, 2) where round % 60 == 2: try? storage.removeAll()
                case (2, _): _ = storage.allKeys.count + storage.totalSize
                default:
                    if let data = try? dataView.object(forKey: key),
                       let user = try? JSONDecoder().decode(User.self, from: data), user.name != key {
                        wrongValues.record("raw \(key)")
                    }
                    _ = try? storage.existsObject(forKey: key)
                }
            }
        }
        await asyncWrites.waitForAll()
        storage.waitForQueue()
        storage.waitForObservers()

        #expect(wrongValues.all.isEmpty)
        #expect(storage.totalSize <= maxSize)
        #expect(observer.adds == writes.all.count, "an add was observed for every write that succeeded, and only those")
        #expect(keyObserver.adds == writes.all.filter { $0 == "w0-1" }.count)
        for key in storage.allKeys {
            if let user = try? storage.entry(forKey: key).object { #expect(user.name == key) }
        }
        token.cancel()
        keyToken.cancel()
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
