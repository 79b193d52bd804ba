import Foundation
import Observation
import Testing
@testable import Stash
@testable import StashEngine

/// Marks the main dispatch queue, which runs the main actor's jobs.
private let mainQueueKey = DispatchSpecificKey<Bool>()

/// Runs `trigger` (off the main actor) and waits, at most `seconds` (a deadline only, so a lost update
/// fails the test instead of hanging it), for `tracked`'s observed properties to change. Returns
/// whether they changed; false on timeout.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
func observedChange(
    of tracked: @escaping @MainActor () -> Void,
    within seconds: Double = TestDeadline.long,
    after trigger: @escaping @Sendable () throws -> Void
) async throws -> Bool {
    let (stream, continuation) = AsyncStream<Bool>.makeStream()
    withObservationTracking(tracked) { continuation.yield(true) }
    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.yield(false) }
    try await onDispatchThread(trigger)
    for await changed in stream { return changed }
    return false
}

/// Runs `body` on a Dispatch thread, not on Swift concurrency's cooperative pool, and waits for it: on
/// a loaded machine, tests that block the pool's few threads must not hold up the write a test awaits
/// (a task that never started looked like a change that never came).
func onDispatchThread(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
        DispatchQueue.global().async {
            do {
                try body()
                continuation.resume()
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}

/// `ObservableValue` and `ObservableCollection` follow their store until released, whatever the app
/// does with its own observers, and show every batch whole, on the main actor.
@Suite("Observable objects keep following their store", .serialized) // the main actor, one test at a time
@MainActor
struct ObservableFollowingTests {
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("removeObserver(forKey:), removeAllKeyObservers() and removeAllStorageObservers() leave the observables following")
    func removalCallsLeaveObservablesAlone() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let me = ObservableValue("me", in: storage)
        let team = ObservableCollection(prefix: "team.", in: storage)
        let center = storage.observationCenter
        let registered = center.registrationCount

        storage.removeObserver(forKey: "me")
        storage.removeAllKeyObservers()
        storage.removeAllStorageObservers()
        #expect(center.registrationCount == registered)

        #expect(try await observedChange(of: { _ = me.value }) {
            try other.setObject(User(name: "Ada", age: 36), forKey: "me")
        })
        #expect(me.value == User(name: "Ada", age: 36))
        #expect(try await observedChange(of: { _ = team.values }) {
            try other.setObject(User(name: "Bob", age: 41), forKey: "team.bob")
        })
        #expect(team.values == ["team.bob": User(name: "Bob", age: 41)])
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("an app's own observer closures are still removed by the same calls")
    func removalCallsStillRemoveClosures() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let heard = Recorder<String>()
        storage.addObserver(heard, forKey: "me") { heard, _, _ in heard.append("key") }
        storage.addStorageObserver(heard) { heard, _, _ in heard.append("storage") }
        let me = ObservableValue("me", in: storage)
        storage.removeAllKeyObservers()
        storage.removeAllStorageObservers()
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        #expect(heard.received.isEmpty)
        me.applyReceivedChanges()
        #expect(me.value == User(name: "Ada", age: 36))
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a collection never shows half a batch: every state seen on the main actor has all ten values equal",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func collectionSeesBatchesWhole() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let keys = (0..<10).map { "p.\($0)" }
        try other.setObjects(Dictionary(uniqueKeysWithValues: keys.map { ($0, User(name: "p", age: 0)) }))
        let rows = ObservableCollection(prefix: "p.", in: storage)
        let batches = 800
        let finished = Locked(false)
        let writer = Task.detached {
            defer { finished.withLock { $0 = true } }
            for number in 1...batches {
                var batch = StorageBatch<User>()
                for key in keys { batch.setObject(User(name: "p", age: number), forKey: key) }
                try other.write(batch)
            }
        }
        var (states, mixed) = (0, 0)
        func look() {
            states += 1
            if Set(rows.values.values.map(\.age)).count != 1 || rows.values.count != 10 { mixed += 1 }
        }
        // The main actor looks between its drains until the writer is done, then until the last batch shows.
        while !finished.withLock({ $0 }) {
            look()
            await Task.yield()
        }
        try await writer.value
        var rounds = 0
        while rows.values["p.0"]?.age != batches, rounds < 10_000 {
            rounds += 1
            look()
            await Task.yield()
        }
        look()
        #expect(rows.values.values.allSatisfy { $0.age == batches })
        #expect(mixed == 0, "\(mixed) of \(states) states mixed two batches")
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a value never shows a state a batch passes through: two sets of one key in a batch are one change",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func valueSeesBatchesWhole() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let counter = ObservableValue("counter", in: storage)
        let batches = 500
        let finished = Locked(false)
        let writer = Task.detached {
            defer { finished.withLock { $0 = true } }
            for number in 1...batches {
                var batch = StorageBatch<User>()
                batch.setObject(User(name: "passing", age: -number), forKey: "counter")
                batch.setObject(User(name: "final", age: number), forKey: "counter")
                try other.write(batch)
            }
        }
        var seenPassing = 0
        while !finished.withLock({ $0 }) {
            if counter.value?.name == "passing" { seenPassing += 1 }
            await Task.yield()
        }
        try await writer.value
        var rounds = 0
        while counter.value?.age != batches, rounds < 10_000 {
            rounds += 1
            await Task.yield()
        }
        #expect(counter.value == User(name: "final", age: batches))
        #expect(seenPassing == 0)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("changes() yields a batch's changes together, in order, after the call returns")
    func streamSeesBatchInOrder() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        var iterator = storage.changes().makeAsyncIterator()
        var batch = StorageBatch<User>()
        for key in ["a", "b", "c"] { batch.setObject(User(name: key, age: 1), forKey: key) }
        try storage.write(batch)
        var seen: [StorageChange] = []
        for _ in 0..<3 { if let change = await iterator.next() { seen.append(change) } }
        #expect(seen == [.add(key: "a"), .add(key: "b"), .add(key: "c")])
    }
}
