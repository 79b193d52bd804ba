import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 12 (observers see every change, through every view, any number per key; cancel
/// and deallocation stop delivery) and item 4's "observer closures never run on the store's queue".
@Suite("Observation")
struct ObservationTests {
    private let ann = User(name: "ann", age: 30)
    private let bob = User(name: "bob", age: 40)

    // MARK: Storage observers

    // Contract 12: storage observers see each kind of change, in order.
    @Test("storage observers see add, remove, removeExpired and removeAll in order")
    func storageObserverSeesEveryChangeInOrder() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let recorder = Recorder<StorageChange>()
        storage.addStorageObserver(recorder) { recorder, _, change in recorder.append(change) }

        try storage.setObject(ann, forKey: "a")
        try storage.setObject(bob, forKey: "b")
        try storage.setObject(ann, forKey: "a") // a replacement is an add too
        try storage.setObject(bob, forKey: "short", expiry: .seconds(1))
        try storage.removeObject(forKey: "a")
        clock.advance(by: 2)
        try storage.removeExpiredObjects()
        try storage.removeAll()
        storage.waitForObservers()

        #expect(recorder.received == [
            .add(key: "a"), .add(key: "b"), .add(key: "a"), .add(key: "short"),
            .remove(key: "a"), .removeExpired, .removeAll,
        ])
    }

    // Contract 12: an eviction by the disk limit is a change too.
    @Test("a value evicted by the disk limit is reported as removed")
    func diskEvictionIsObserved() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(maxSize: 100), transformer: TransformerFactory.forData())
        let recorder = Recorder<StorageChange>()
        let keyRecorder = Recorder<KeyChange<Data>>()
        storage.addStorageObserver(recorder) { recorder, _, change in recorder.append(change) }
        storage.addObserver(keyRecorder, forKey: "old") { recorder, _, change in recorder.append(change) }
        try storage.setObject(Data(count: 60), forKey: "old")
        try storage.setObject(Data(count: 60), forKey: "new") // 120 > 100: "old" is evicted
        storage.waitForObservers()

        #expect(storage.allKeys == ["new"])
        #expect(recorder.received == [.add(key: "old"), .add(key: "new"), .remove(key: "old")])
        #expect(keyRecorder.received == [.edit(before: nil, after: Data(count: 60)), .remove])
    }

    // MARK: Key observers

    // Contract 12: key observers get before/after values and every kind of removal.
    @Test("key observers get edits with the right before and after values, and removals of every kind")
    func keyObserverSeesEditsAndRemovals() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let recorder = Recorder<KeyChange<User>>()
        storage.addObserver(recorder, forKey: "k") { recorder, _, change in recorder.append(change) }
        let carl = User(name: "carl", age: 50)

        try storage.setObject(ann, forKey: "k")
        try storage.setObject(bob, forKey: "k")
        try storage.setObject(bob, forKey: "other") // another key: not delivered
        try storage.removeObject(forKey: "k")
        try storage.setObject(carl, forKey: "k")
        try storage.removeAll()
        try storage.setObject(ann, forKey: "k", expiry: .seconds(5))
        clock.advance(by: 10)
        try storage.removeExpiredObjects()
        storage.waitForObservers()

        #expect(recorder.received == [
            .edit(before: nil, after: ann), .edit(before: ann, after: bob), .remove,
            .edit(before: nil, after: carl), .remove,
            .edit(before: nil, after: ann), .remove,
        ])
    }

    // Contract 12: any number of observers per key.
    @Test("several observers of one key all get every change", arguments: [2, 5])
    func severalObserversOfOneKey(count: Int) throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let recorders = (0..<count).map { _ in Recorder<KeyChange<User>>() }
        for recorder in recorders {
            storage.addObserver(recorder, forKey: "k") { recorder, _, change in recorder.append(change) }
        }
        // The same object may observe a key twice, and is then called twice.
        let twice = Recorder<KeyChange<User>>()
        storage.addObserver(twice, forKey: "k") { recorder, _, change in recorder.append(change) }
        storage.addObserver(twice, forKey: "k") { recorder, _, change in recorder.append(change) }

        try storage.setObject(ann, forKey: "k")
        try storage.setObject(bob, forKey: "k")
        try storage.removeObject(forKey: "k")
        storage.waitForObservers()

        let expected: [KeyChange<User>] = [.edit(before: nil, after: ann), .edit(before: ann, after: bob), .remove]
        for recorder in recorders { #expect(recorder.received == expected) }
        #expect(twice.received.count == 2 * expected.count)
    }

    // MARK: Every way of writing

    // Contract 12: writes through typed views are observed with the observer's own type.
    @Test("writes through transformData and transformCodable views are observed")
    func writesThroughViewsAreObserved() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        let codable = storage.transformCodable(ofType: User.self)
        let changes = Recorder<StorageChange>()
        let userChanges = Recorder<KeyChange<User>>()
        let dataChanges = Recorder<KeyChange<Data>>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        storage.addObserver(userChanges, forKey: "k") { recorder, _, change in recorder.append(change) }
        data.addObserver(dataChanges, forKey: "k") { recorder, _, change in recorder.append(change) } // observed through a view

        let annJSON = try JSONEncoder().encode(ann)
        try data.setObject(annJSON, forKey: "k")
        try codable.setObject(bob, forKey: "k")
        try data.setObject(Data("not a user".utf8), forKey: "k")
        try codable.removeObject(forKey: "k")
        storage.waitForObservers()

        #expect(changes.received == [.add(key: "k"), .add(key: "k"), .add(key: "k"), .remove(key: "k")])
        // Bytes that do not decode as User are not delivered to a User observer; the rest are, decoded.
        #expect(userChanges.received == [.edit(before: nil, after: ann), .edit(before: ann, after: bob), .remove])
        withExtendedLifetime(data) {} // observers added through a view live as long as the view
        // JSONEncoder orders object keys differently from one call to the next on Linux: compare canonical JSON.
        let annText = canonicalJSON(annJSON), bobText = canonicalJSON(try JSONEncoder().encode(bob))
        #expect(dataChanges.received.map(CanonicalChange.init) == [
            .edit(before: nil, after: annText), .edit(before: annText, after: bobText),
            .edit(before: bobText, after: "not a user"), .remove,
        ])
    }

    // Contract 12 and 11: another Storage on the same folder shares the observers.
    @Test("writes through a second Storage and a DiskStorage on the same folder are observed")
    func writeThroughSecondStorageIsObserved() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let second = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        let keyChanges = Recorder<KeyChange<User>>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        storage.addObserver(keyChanges, forKey: "k") { recorder, _, change in recorder.append(change) }

        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: User.self))

        try storage.setObject(ann, forKey: "k")
        try second.setObject(bob, forKey: "k")
        try disk.setObject(ann, forKey: "k") // a bare disk layer on the folder shares them too
        try second.removeAll()
        storage.waitForObservers()

        #expect(changes.received == [.add(key: "k"), .add(key: "k"), .add(key: "k"), .removeAll])
        #expect(keyChanges.received == [
            .edit(before: nil, after: ann), .edit(before: ann, after: bob), .edit(before: bob, after: ann), .remove,
        ])
    }

    // Contract 12: the async API's writes are observed.
    @Test("writes through the async API are observed")
    func asyncWritesAreObserved() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let changes = Recorder<StorageChange>()
        let keyChanges = Recorder<KeyChange<User>>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        storage.addObserver(keyChanges, forKey: "k") { recorder, _, change in recorder.append(change) }

        try await storage.async.setObject(ann, forKey: "k")
        let _: Void = try await withCheckedThrowingContinuation { continuation in
            storage.async.setObject(bob, forKey: "k") { continuation.resume(with: $0) }
        }
        try await storage.async.removeObject(forKey: "k")
        storage.waitForObservers()

        #expect(changes.received == [.add(key: "k"), .add(key: "k"), .remove(key: "k")])
        #expect(keyChanges.received == [.edit(before: nil, after: ann), .edit(before: ann, after: bob), .remove])
    }

    // MARK: Stopping delivery

    // Contract 12: cancel() stops delivery.
    @Test("token.cancel() stops delivery to storage and key observers")
    func cancelStopsDelivery() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let cancelled = Recorder<StorageChange>()
        let cancelledKey = Recorder<KeyChange<User>>()
        let kept = Recorder<StorageChange>()
        let storageToken = storage.addStorageObserver(cancelled) { recorder, _, change in recorder.append(change) }
        let keyToken = storage.addObserver(cancelledKey, forKey: "k") { recorder, _, change in recorder.append(change) }
        storage.addStorageObserver(kept) { recorder, _, change in recorder.append(change) }

        try storage.setObject(ann, forKey: "k")
        storage.waitForObservers()
        storageToken.cancel()
        keyToken.cancel()
        try storage.setObject(bob, forKey: "k")
        try storage.removeObject(forKey: "k")
        storage.waitForObservers()

        #expect(cancelled.received == [.add(key: "k")])
        #expect(cancelledKey.received == [.edit(before: nil, after: ann)])
        #expect(kept.received == [.add(key: "k"), .add(key: "k"), .remove(key: "k")]) // delivery itself goes on
    }

    // Contract 12: changes committed but not yet delivered when cancel() returns are never delivered.
    @Test("changes committed before cancel() but not yet delivered are dropped", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func cancelDropsQueuedChanges() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let observers = storage.hybridStorage.engine.observers
        let recorder = Recorder<StorageChange>()
        let gate = DispatchSemaphore(value: 0)
        let blocker = Recorder<StorageChange>()
        // The first observer holds the delivery of "first" (on the writing thread) until the test
        // has cancelled the second; "second" is committed meanwhile and waits its turn.
        storage.addStorageObserver(blocker) { recorder, _, change in
            recorder.append(change)
            if change == .add(key: "first") { gate.wait() }
        }
        let token = storage.addStorageObserver(recorder) { recorder, _, change in recorder.append(change) }
        let writers = DispatchGroup()
        let (ann, bob) = (ann, bob)
        // Threads of their own, not the global queue: the first writer stays blocked in its delivery,
        // and under load (ThreadSanitizer, parallel suites) the global queue may have no thread left.
        func write(_ user: User, _ key: String) {
            writers.enter()
            Thread {
                try? storage.setObject(user, forKey: key)
                writers.leave()
            }.start()
        }
        write(ann, "first")
        try waitUntil { observers.lastPublished >= 1 }
        write(bob, "second")
        try waitUntil { observers.lastPublished >= 2 }
        token.cancel()
        gate.signal()
        writers.wait()

        #expect(blocker.received == [.add(key: "first"), .add(key: "second")])
        #expect(recorder.received.isEmpty)
    }

    // Contract 12: a deallocated observer stops delivery and is not kept alive by the storage.
    @Test("a deallocated observer object stops delivery")
    func deallocatedObserverStopsDelivery() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let log = Recorder<String>() // outlives the observers
        var storageObserver: Recorder<StorageChange>? = Recorder()
        var keyObserver: Recorder<KeyChange<User>>? = Recorder()
        let weakStorageObserver = WeakReference(storageObserver)
        let weakKeyObserver = WeakReference(keyObserver)
        if let storageObserver {
            storage.addStorageObserver(storageObserver) { _, _, change in log.append("storage \(change)") }
        }
        if let keyObserver {
            storage.addObserver(keyObserver, forKey: "k") { _, _, _ in log.append("key") }
        }

        try storage.setObject(ann, forKey: "k")
        storage.waitForObservers()
        #expect(log.received == ["storage add(key: \"k\")", "key"])

        storageObserver = nil
        keyObserver = nil
        #expect(weakStorageObserver.object == nil, "the storage must not retain its observers")
        #expect(weakKeyObserver.object == nil, "the storage must not retain its observers")
        try storage.setObject(bob, forKey: "k")
        try storage.removeObject(forKey: "k")
        storage.waitForObservers()
        #expect(log.received == ["storage add(key: \"k\")", "key"])
    }

    // Contract 12: the bulk removal calls each remove exactly their kind of observer.
    @Test("removeObserver(forKey:), removeAllKeyObservers and removeAllStorageObservers remove exactly their observers")
    func bulkRemoval() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let all = Recorder<StorageChange>()
        let first = Recorder<KeyChange<User>>()
        let second = Recorder<KeyChange<User>>()
        storage.addStorageObserver(all) { recorder, _, change in recorder.append(change) }
        storage.addObserver(first, forKey: "k1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(first, forKey: "k1") { recorder, _, change in recorder.append(change) }
        storage.addObserver(second, forKey: "k2") { recorder, _, change in recorder.append(change) }

        storage.removeObserver(forKey: "k1") // both observers of k1
        try storage.setObject(ann, forKey: "k1")
        try storage.setObject(ann, forKey: "k2")
        storage.waitForObservers()
        #expect(first.received.isEmpty)
        #expect(second.received == [.edit(before: nil, after: ann)])
        #expect(all.received == [.add(key: "k1"), .add(key: "k2")])

        storage.removeAllKeyObservers()
        try storage.setObject(bob, forKey: "k2")
        storage.waitForObservers()
        #expect(second.received == [.edit(before: nil, after: ann)])
        #expect(all.received == [.add(key: "k1"), .add(key: "k2"), .add(key: "k2")])

        let later = Recorder<KeyChange<User>>()
        storage.addObserver(later, forKey: "k2") { recorder, _, change in recorder.append(change) }
        storage.removeAllStorageObservers()
        try storage.removeObject(forKey: "k2")
        storage.waitForObservers()
        #expect(all.received == [.add(key: "k1"), .add(key: "k2"), .add(key: "k2")])
        #expect(later.received == [.remove]) // key observers are not storage observers
    }

    // Contract 12: the removals reach observers registered through another view of the store.
    @Test("removing observers through one view removes those added through another")
    func removalIsPerStoreNotPerView() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let data = storage.transformData()
        let recorder = Recorder<StorageChange>()
        data.addStorageObserver(recorder) { recorder, _, change in recorder.append(change) }
        storage.removeAllStorageObservers()
        try storage.setObject(ann, forKey: "k")
        storage.waitForObservers()
        withExtendedLifetime(data) {} // the view is alive: only the removal can stop its observer
        #expect(recorder.received.isEmpty)
    }

    // MARK: Queue discipline

    // Contract 4: observer closures never run on the store's queue, so they may call the storage.
    @Test("observer closures run off the store's queue and may call the storage synchronously",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func observerCanCallStorage() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let engine = storage.hybridStorage.engine
        let log = Recorder<String>()
        let observer = Recorder<StorageChange>()
        storage.addStorageObserver(observer) { _, storage, change in
            log.append("storage observer on queue: \(engine.isOnQueue)")
            guard change == .add(key: "trigger") else { return }
            do {
                try storage.setObject(User(name: "echo", age: 1), forKey: "echo") // needs the queue
                log.append("keys: \(storage.allKeys.sorted())")
                log.append("echo: \(try storage.object(forKey: "echo").name)")
            } catch {
                log.append("error: \(error)")
            }
        }
        storage.addObserver(observer, forKey: "trigger") { _, storage, _ in
            log.append("key observer on queue: \(engine.isOnQueue)")
            log.append("exists: \((try? storage.existsObject(forKey: "trigger")) ?? false)")
        }

        try storage.setObject(ann, forKey: "trigger")
        storage.waitForObservers() // delivers the trigger (which queues the echo's change)
        storage.waitForObservers() // delivers the echo's change
        #expect(log.received == [
            "storage observer on queue: false",
            "keys: [\"echo\", \"trigger\"]",
            "echo: echo",
            "key observer on queue: false",
            "exists: true",
            "storage observer on queue: false",
        ])
        #expect(try storage.object(forKey: "echo").name == "echo")
    }

    // Contract 4: the async streams are fed off the store's queue too.
    @Test("an observer closure reached through the async API runs off the store's queue")
    func observerOfAsyncWriteRunsOffQueue() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let engine = storage.hybridStorage.engine
        let log = Recorder<Bool>()
        storage.addObserver(log, forKey: "k") { recorder, _, _ in recorder.append(engine.isOnQueue) }
        try await storage.async.setObject(ann, forKey: "k")
        storage.waitForObservers()
        #expect(log.received == [false])
    }

    // MARK: AsyncStream

    // Contract 12: `changes()` yields every change of the store.
    @Test("changes() yields the store's changes in order", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func changesStream() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        let stream = storage.changes() // registered when made
        try storage.setObject(ann, forKey: "a")
        try storage.transformData().setObject(Data("{}".utf8), forKey: "b")
        try await storage.async.setObject(bob, forKey: "c", expiry: .seconds(1))
        try storage.removeObject(forKey: "a")
        clock.advance(by: 2)
        try storage.removeExpiredObjects()
        try storage.removeAll()

        var received: [StorageChange] = []
        for await change in stream {
            received.append(change)
            if received.count == 6 { break }
        }
        #expect(received == [.add(key: "a"), .add(key: "b"), .add(key: "c"), .remove(key: "a"), .removeExpired, .removeAll])
    }

    // Contract 12: the removeAll…Observers calls remove closures, not streams, whose loops would hang.
    @Test("removing every observer closure leaves changes() and changes(forKey:) streams running", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func bulkRemovalKeepsStreams() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let all = storage.changes()
        let keyed = storage.changes(forKey: "k")
        storage.removeAllStorageObservers()
        storage.removeAllKeyObservers()
        storage.removeObserver(forKey: "k")
        try storage.setObject(ann, forKey: "k")
        for await change in all {
            #expect(change == .add(key: "k"))
            break
        }
        for await change in keyed {
            #expect(change == .edit(before: nil, after: ann))
            break
        }
    }

    // Contract 12: `changes(forKey:)` yields that key's decoded changes only.
    @Test("changes(forKey:) yields the key's edits and removals with decoded values", .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func keyChangesStream() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let stream = storage.changes(forKey: "k")
        try storage.setObject(ann, forKey: "k")
        try storage.setObject(ann, forKey: "other")
        try await storage.async.setObject(bob, forKey: "k")
        try storage.removeAll()

        var received: [KeyChange<User>] = []
        for await change in stream {
            received.append(change)
            if received.count == 3 { break }
        }
        #expect(received == [.edit(before: nil, after: ann), .edit(before: ann, after: bob), .remove])
    }
}

/// A `KeyChange<Data>` with JSON values in canonical form (sorted keys), so they compare by meaning.
private enum CanonicalChange: Equatable {
    case edit(before: String?, after: String)
    case remove

    init(_ change: KeyChange<Data>) {
        switch change {
        case .edit(let before, let after): self = .edit(before: before.map(canonicalJSON), after: canonicalJSON(after))
        case .remove: self = .remove
        }
    }
}

/// `data` re-serialised with sorted keys when it is JSON, else its UTF-8 text.
private func canonicalJSON(_ data: Data) -> String {
    guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]),
          let sorted = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed])
    else { return String(decoding: data, as: UTF8.self) }
    return String(decoding: sorted, as: UTF8.self)
}
