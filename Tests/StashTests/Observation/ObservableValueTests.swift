import Foundation
import Observation
import Testing
@testable import Stash
@testable import StashEngine

/// Marks the main dispatch queue, which runs the main actor's jobs: `Thread.isMainThread` is no test of
/// the main actor under `swift test` on Linux (there the main queue is drained by another thread).
private let mainQueueKey = DispatchSpecificKey<Bool>()

/// `ObservableValue` and `ObservableCollection`: `@Observable` objects that follow a store, updated on
/// the main actor. Changes are awaited through `withObservationTracking`, never by sleeping.
@Suite("Observable values", .serialized) // one test at a time on the main actor: another test's synchronous part would hold up this one's updates
@MainActor
struct ObservableValueTests {
    /// Runs `trigger` (off the main actor) and waits, at most `seconds`, for `tracked`'s observed
    /// properties to change. Returns whether the change was made on the main actor's queue; nil on timeout.
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    private func change(
        of tracked: @escaping @MainActor () -> Void,
        within seconds: Double = TestDeadline.long,
        after trigger: @escaping @Sendable () throws -> Void
    ) async throws -> Bool? {
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
        let (stream, continuation) = AsyncStream<Bool?>.makeStream()
        withObservationTracking(tracked) { continuation.yield(DispatchQueue.getSpecific(key: mainQueueKey) == true) }
        // A deadline only, so a lost update fails the test instead of hanging it.
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.yield(nil) }
        try await onDispatchThread(trigger)
        for await onMain in stream { return onMain }
        return nil
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("follows writes from another Storage on the same folder, updated on the main actor")
    func followsAnotherStorage() async throws {
        let directory = TemporaryDirectory()
        let mine = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let me = ObservableValue("me", in: mine)
        #expect(me.value == nil)

        let onMain = try await change(of: { _ = me.value }) {
            try other.setObject(User(name: "Ada", age: 36), forKey: "me")
        }
        #expect(onMain == true)
        #expect(me.value == User(name: "Ada", age: 36))

        let removedOnMain = try await change(of: { _ = me.value }) { try other.removeObject(forKey: "me") }
        #expect(removedOnMain == true)
        #expect(me.value == nil)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("follows writes through another typed view; undecodable bytes show as nil with an error")
    func followsAnotherView() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        let me = ObservableValue("me", in: storage)
        #expect(me.value == User(name: "Ada", age: 36))

        let raw = storage.transformData()
        let json = try JSONEncoder().encode(User(name: "Bob", age: 41))
        #expect(try await change(of: { _ = me.value }) { try raw.setObject(json, forKey: "me") } == true)
        #expect(me.value == User(name: "Bob", age: 41))

        #expect(try await change(of: { _ = me.value }) { try raw.setObject(Data("not json".utf8), forKey: "me") } == true)
        #expect(me.value == nil)
        #expect(me.error != nil) // never a silent nil
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("a write through the object shows when the call returns, before any other change is awaited")
    func ownWritesShowAtOnce() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let me = ObservableValue("me", in: storage)
        try me.set(User(name: "Ada", age: 36))
        #expect(me.value == User(name: "Ada", age: 36))
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 36))
        try me.remove()
        #expect(me.value == nil)
        #expect(try storage.existsObject(forKey: "me") == false)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("many writes from another thread end at the last one committed")
    func endsAtTheLastWrite() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let counter = ObservableValue("counter", in: storage)
        let onMain = try await change(of: { _ = counter.value }) {
            for age in 1...200 { try other.setObject(User(name: "n", age: age), forKey: "counter") }
        }
        #expect(onMain == true)
        // Every write was committed before the trigger returned: one drain on the main actor shows the last.
        var rounds = 0
        while counter.value?.age != 200, rounds < 200 {
            rounds += 1
            _ = try await change(of: { _ = counter.value }, within: 5) {}
        }
        #expect(counter.value?.age == 200)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("a released object stops observing the store")
    func releasedObjectUnregisters() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let center = storage.observationCenter
        let before = center.registrationCount
        do {
            let me = ObservableValue("me", in: storage)
            let all = ObservableCollection(in: storage)
            #expect(center.registrationCount == before + 2)
            _ = (me, all)
        }
        #expect(center.registrationCount == before)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("the inbox of a value keeps only the latest change however long the main actor is busy")
    func inboxKeepsLatestOnly() {
        let inbox = MainActorInbox<Int>(keepsLatestOnly: true)
        #expect(inbox.append(1))   // asks for a drain
        #expect(!inbox.append(2))  // one is scheduled already
        #expect(inbox.takeAll() == [2])
        #expect(inbox.append(3))
        let all = MainActorInbox<Int>()
        _ = all.append(1)
        _ = all.append(2)
        #expect(all.takeAll() == [1, 2])
    }

    // MARK: ObservableCollection

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("after concurrent writes and removals from two threads the collection equals the store")
    func collectionConvergesUnderConcurrentWriters() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let other = try makeUserStorage(in: directory)
        let all = ObservableCollection(prefix: "k.", in: storage)
        let onMain = try await change(of: { _ = all.values }) {
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                var generator = SeededGenerator(seed: UInt64(thread + 1))
                for step in 0..<150 {
                    let key = "k.\(generator.below(40))"
                    if generator.below(4) == 0 {
                        try? other.removeObject(forKey: key)
                    } else {
                        try? other.setObject(User(name: key, age: thread * 1_000 + step), forKey: key)
                    }
                }
            }
        }
        #expect(onMain == true)
        func stored() -> [String: User] {
            Dictionary(uniqueKeysWithValues: storage.allKeys(withPrefix: "k.").compactMap { key in
                (try? storage.object(forKey: key)).map { (key, $0) }
            })
        }
        var rounds = 0
        while all.values != stored(), rounds < 200 {
            rounds += 1
            _ = try await change(of: { _ = all.values }, within: 5) {}
        }
        #expect(all.values == stored())
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("the collection follows the keys under its prefix through another Storage and another view")
    func collectionFollowsPrefix() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "team.ada")
        try storage.setObject(User(name: "Eve", age: 30), forKey: "guest.eve")
        let team = ObservableCollection(prefix: "team.", in: storage)
        #expect(team.values == ["team.ada": User(name: "Ada", age: 36)])

        let other = try makeUserStorage(in: directory)
        #expect(try await change(of: { _ = team.values }) {
            try other.setObject(User(name: "Guest", age: 1), forKey: "guest.bob")  // outside the prefix: no change…
            try other.setObject(User(name: "Bob", age: 41), forKey: "team.bob")    // …this one is
        } == true)
        #expect(team.values == ["team.ada": User(name: "Ada", age: 36), "team.bob": User(name: "Bob", age: 41)])

        let raw = other.transformData()
        #expect(try await change(of: { _ = team.values }) { try raw.removeObject(forKey: "team.ada") } == true)
        #expect(team.values == ["team.bob": User(name: "Bob", age: 41)])

        #expect(try await change(of: { _ = team.values }) { try other.removeAll() } == true)
        #expect(team.values.isEmpty)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("the collection's own writes show when the call returns; NFD keys match an NFC prefix")
    func collectionOwnWrites() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let cafe = ObservableCollection(prefix: "caf\u{E9}.", in: storage)
        try cafe.set(User(name: "menu", age: 1), forKey: "cafe\u{301}.menu")
        #expect(cafe.values["caf\u{E9}.menu"] == User(name: "menu", age: 1))
        try cafe.set(User(name: "elsewhere", age: 1), forKey: "bar.menu")
        #expect(cafe.values.count == 1)
        try cafe.remove(forKey: "caf\u{E9}.menu")
        #expect(cafe.values.isEmpty)
    }
}
