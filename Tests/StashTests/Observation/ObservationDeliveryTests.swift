import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 12's timing: by the time a mutating call returns (or before its completion runs)
/// every observer registered before it has been called, in commit order across threads, never on the
/// store's queue, without deadlock when an observer calls the storage. The first tests are
/// hyperoslo/Cache 5's own observer tests (StorageTests), ported: they check right after `setObject`.
@Suite("Observation delivery")
struct ObservationDeliveryTests {
    private let user = User(name: "John", age: 30)

    // MARK: hyperoslo/Cache 5's observer tests, ported

    // Contract 12 (Cache 5 testAddStorageObserver): every change, .removeExpired even when nothing expired,
    // nothing after the observer is released.
    @Test("Cache 5: a storage observer has seen each change when the call returns; none once it is released")
    func cacheAddStorageObserver() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        var observer: Recorder<Int>? = Recorder()
        storage.addStorageObserver(try #require(observer)) { _, _, change in changes.append(change) }

        try storage.setObject(user, forKey: "user1")
        try storage.setObject(user, forKey: "user2")
        try storage.removeObject(forKey: "user1")
        try storage.removeExpiredObjects() // nothing has expired: still notified
        try storage.removeAll()
        observer = nil
        try storage.setObject(user, forKey: "user1")

        #expect(changes.received == [.add(key: "user1"), .add(key: "user2"), .remove(key: "user1"), .removeExpired, .removeAll])
    }

    // Contract 12 (Cache 5 testRemoveAllStorageObservers).
    @Test("Cache 5: two storage observers are called before setObject returns; removeAllStorageObservers stops both")
    func cacheRemoveAllStorageObservers() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let (changes1, changes2) = (Recorder<StorageChange>(), Recorder<StorageChange>())
        storage.addStorageObserver(changes1) { recorder, _, change in recorder.append(change) }
        storage.addStorageObserver(changes2) { recorder, _, change in recorder.append(change) }

        try storage.setObject(user, forKey: "user1")
        #expect(changes1.received == [.add(key: "user1")])
        #expect(changes2.received == [.add(key: "user1")])

        storage.removeAllStorageObservers()
        try storage.setObject(user, forKey: "user1")
        #expect(changes1.received == [.add(key: "user1")])
        #expect(changes2.received == [.add(key: "user1")])
    }

    // Contract 12 (Cache 5 testAddObserverForKey).
    @Test("Cache 5: a key observer has seen the edit when setObject returns, and only its key's")
    func cacheAddObserverForKey() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<KeyChange<User>>()
        storage.addObserver(changes, forKey: "user1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(changes, forKey: "user2") { recorder, _, change in recorder.append(change) }

        try storage.setObject(user, forKey: "user1")
        #expect(changes.received == [.edit(before: nil, after: user)])
    }

    // Contract 12 (Cache 5 testKeyObserverWithRemoveExpired).
    @Test("Cache 5: a key observer hears the removal of its expired key when removeExpiredObjects returns")
    func cacheKeyObserverWithRemoveExpired() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<KeyChange<User>>()
        storage.addObserver(changes, forKey: "user1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(changes, forKey: "user2") { recorder, _, change in recorder.append(change) }

        try storage.setObject(user, forKey: "user1", expiry: .seconds(-1000))
        try storage.removeExpiredObjects()
        #expect(changes.received == [.edit(before: nil, after: user), .remove])
    }

    // Contract 12 (Cache 5 testKeyObserverWithRemoveAll).
    @Test("Cache 5: key observers hear removeAll when it returns")
    func cacheKeyObserverWithRemoveAll() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let (changes1, changes2) = (Recorder<KeyChange<User>>(), Recorder<KeyChange<User>>())
        storage.addObserver(changes1, forKey: "user1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(changes2, forKey: "user2") { recorder, _, change in recorder.append(change) }

        try storage.setObject(user, forKey: "user1")
        try storage.setObject(user, forKey: "user2")
        try storage.removeAll()
        #expect(changes1.received == [.edit(before: nil, after: user), .remove])
        #expect(changes2.received == [.edit(before: nil, after: user), .remove])
    }

    // Contract 12 (Cache 5 testRemoveKeyObserver and testRemoveAllKeyObservers).
    @Test("Cache 5: removeObserver(forKey:), a cancelled token and removeAllKeyObservers stop key observers")
    func cacheRemoveKeyObservers() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<KeyChange<User>>()
        storage.addObserver(changes, forKey: "user1") { recorder, _, change in recorder.append(change) }
        storage.removeObserver(forKey: "user1")
        try storage.setObject(user, forKey: "user1")
        #expect(changes.received.isEmpty)

        let token = storage.addObserver(changes, forKey: "user2") { recorder, _, change in recorder.append(change) }
        token.cancel()
        try storage.setObject(user, forKey: "user2")
        #expect(changes.received.isEmpty)

        let (changes1, changes2) = (Recorder<KeyChange<User>>(), Recorder<KeyChange<User>>())
        storage.addObserver(changes1, forKey: "user1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(changes2, forKey: "user2") { recorder, _, change in recorder.append(change) }
        try storage.setObject(user, forKey: "user1")
        try storage.setObject(user, forKey: "user2")
        #expect(changes1.received == [.edit(before: user, after: user)])
        #expect(changes2.received == [.edit(before: user, after: user)])
        storage.removeAllKeyObservers()
        try storage.setObject(user, forKey: "user1")
        #expect(changes1.received.count == 1 && changes2.received.count == 1)
    }

    // MARK: The async API

    // Contract 12: observers have heard of an async change before its completion handler runs.
    @Test("observers are called before the completion handler of an async mutation runs", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func observersBeforeCompletion() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        let seenInCompletion: [StorageChange] = try await withCheckedThrowingContinuation { continuation in
            storage.async.setObject(user, forKey: "k") { result in
                continuation.resume(with: result.map { changes.received })
            }
        }
        #expect(seenInCompletion == [.add(key: "k")])
        try await storage.async.removeObject(forKey: "k")
        #expect(changes.received == [.add(key: "k"), .remove(key: "k")]) // before the await returned
    }

    // MARK: Order, threads, re-entrance

    // Contract 12: several threads writing at once; every observer sees one order, each thread's changes
    // in its own order, and its own change before its call returns.
    @Test("concurrent writers: each call returns after its change was delivered; all observers see one order",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func concurrentWritersSeeOneOrder() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let first = Recorder<StorageChange>(), second = Recorder<StorageChange>()
        storage.addStorageObserver(first) { recorder, _, change in recorder.append(change) }
        storage.addStorageObserver(second) { recorder, _, change in recorder.append(change) }
        let (threads, writes) = (4, 50)
        let misses = Recorder<String>()
        let user = user
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<writes {
                let key = "t\(thread)-\(index)"
                try? storage.setObject(user, forKey: key)
                if !first.received.contains(.add(key: key)) { misses.append(key) }
            }
        }
        #expect(misses.received.isEmpty, "changes not delivered when their setObject returned")
        #expect(first.received.count == threads * writes)
        #expect(first.received == second.received)
        for thread in 0..<threads { // each thread's changes in the order it made them
            let own = first.received.compactMap { change -> Int? in
                guard case .add(let key) = change, key.hasPrefix("t\(thread)-") else { return nil }
                return Int(key.dropFirst("t\(thread)-".count))
            }
            #expect(own == Array(0..<writes))
        }
    }

    // Contract 4 and 12: an observer writing from its closure; its change arrives right after the closure.
    @Test("an observer that writes from its closure: no deadlock, and its change is delivered before the outer call returns",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func observerWritesFromItsClosure() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        let onQueue = Recorder<Bool>()
        let engine = storage.hybridStorage.engine
        storage.addStorageObserver(changes) { recorder, storage, change in
            recorder.append(change)
            onQueue.append(engine.isOnQueue)
            guard change == .add(key: "trigger") else { return }
            try? storage.setObject(User(name: "echo", age: 1), forKey: "echo") // sync, from the closure
            storage.async.setObject(User(name: "async", age: 2), forKey: "async") { _ in } // and async
        }
        try storage.setObject(user, forKey: "trigger")
        #expect(changes.received.prefix(2) == [.add(key: "trigger"), .add(key: "echo")])
        try await storage.async.removeObject(forKey: "trigger") // queued after the async write
        #expect(changes.received == [.add(key: "trigger"), .add(key: "echo"), .add(key: "async"), .remove(key: "trigger")])
        #expect(!onQueue.received.contains(true))
    }

    // Contract 4 and 12: a mutating call made on the queue (inside a transformer) does not deadlock; its
    // change reaches observers before the outer call returns, off the queue.
    @Test("a write made inside a transformer (on the store's queue) is delivered before the outer call returns",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func writeFromTransformerIsDelivered() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        let onQueue = Recorder<Bool>()
        let engine = storage.hybridStorage.engine
        storage.addStorageObserver(changes) { recorder, _, change in
            recorder.append(change)
            onQueue.append(engine.isOnQueue)
        }
        let users = storage
        let auditing = storage.transform(transformer: Transformer<String>(
            toData: { Data($0.utf8) },
            fromData: { data in
                // Runs on the store's queue while the disk read is served.
                try users.setObject(User(name: "audit", age: 0), forKey: "audit")
                return String(decoding: data, as: UTF8.self)
            }
        ))
        try storage.transformData().setObject(Data("hello".utf8), forKey: "k")
        // Memory holds `Data`, a miss for a `String` view: a disk read, whose transformer runs on the queue.
        #expect(try auditing.object(forKey: "k") == "hello")
        #expect(changes.received == [.add(key: "k"), .add(key: "audit")])
        #expect(onQueue.received == [false, false])
    }

    // Contract 12: an observer released right after a change that is committed still gets that change.
    @Test("an observer released after a change is committed but before it is delivered still gets the change",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func releasedObserverStillGetsCommittedChange() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let observers = storage.hybridStorage.engine.observers
        let gate = DispatchSemaphore(value: 0)
        let blocker = Recorder<StorageChange>()
        storage.addStorageObserver(blocker) { _, _, change in
            if change == .add(key: "first") { gate.wait() } // holds delivery until the observer below is gone
        }
        let log = Recorder<StorageChange>() // outlives the observer
        var observer: Recorder<Int>? = Recorder()
        let weakObserver = WeakReference(observer)
        storage.addStorageObserver(try #require(observer)) { _, _, change in log.append(change) }

        let writers = DispatchGroup()
        let user = user
        // Threads of their own, not the global queue: the first writer stays blocked in its delivery,
        // and under load (ThreadSanitizer, parallel suites) the global queue may have no thread left.
        func write(_ key: String) {
            writers.enter()
            Thread {
                try? storage.setObject(user, forKey: key)
                writers.leave()
            }.start()
        }
        write("first")
        try waitUntil { observers.lastPublished >= 1 }
        write("second")
        try waitUntil { observers.lastPublished >= 2 }
        observer = nil // both changes are committed: they must still arrive
        gate.signal()
        writers.wait()

        #expect(log.received == [.add(key: "first"), .add(key: "second")])
        #expect(weakObserver.object == nil, "delivered changes do not keep the observer alive")
        try storage.setObject(user, forKey: "third")
        #expect(log.received == [.add(key: "first"), .add(key: "second")])
    }

    // Contract 12: the async stream still gets every change, in order.
    @Test("changes() still yields every change with synchronous delivery", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func streamStillWorks() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let stream = storage.changes()
        try storage.setObject(user, forKey: "a")
        try await storage.async.setObject(user, forKey: "b")
        try storage.removeExpiredObjects()
        var received: [StorageChange] = []
        for await change in stream {
            received.append(change)
            if received.count == 3 { break }
        }
        #expect(received == [.add(key: "a"), .add(key: "b"), .removeExpired])
    }
}
