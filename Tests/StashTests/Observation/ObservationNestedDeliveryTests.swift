import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 12 with observers that write (issue #20 item 3): an observer that calls `setObject`
/// on another store (a cache mirrored into an index) or on its own is ordinary app code. Several
/// threads doing so at once must never deadlock, and each non-nested call still returns only once its
/// change, and the changes its observers made on that thread, reached every observer.
///
/// Each writer runs on a thread of its own (not the global queue, which ThreadSanitizer can starve)
/// and the test waits for them with a deadline: a deadlock fails the test instead of hanging it. The
/// observers meet at a rendezvous before they write, so every writer is delivering at the same moment
/// (the interleaving that deadlocked), deterministically.
@Suite("Observation: observers that write")
struct ObservationNestedDeliveryTests {
    private static let deadline = TestDeadline.long

    /// `count` threads that each call their observer before any of them goes on (bounded).
    final class Rendezvous: @unchecked Sendable {
        // @unchecked Sendable: `arrived` is only touched under `condition`.
        private let condition = NSCondition()
        private var arrived = 0
        private let count: Int

        init(_ count: Int) { self.count = count }

        func meet() {
            condition.lock()
            defer { condition.unlock() }
            arrived += 1
            condition.broadcast()
            let limit = Date().addingTimeInterval(TestDeadline.long / 2) // before `deadline`: a missing thread shows as a failed wait, not a hang
            while arrived < count, condition.wait(until: limit) {}
        }
    }

    /// Runs each of `writers` on a thread of its own; false if they did not all return in time.
    private func runOnThreads(_ writers: [@Sendable () -> Void]) -> Bool {
        let group = DispatchGroup()
        for writer in writers {
            group.enter()
            Thread {
                writer()
                group.leave()
            }.start()
        }
        return group.wait(timeout: .now() + Self.deadline) == .success
    }

    private func makeStores(_ count: Int, in directory: TemporaryDirectory) throws -> [Storage<User>] {
        try (0..<count).map { try makeUserStorage(in: directory, name: "store\($0)") }
    }

    /// The keys that reached `recorder`, as a set (only which, not their order across stores).
    private func keys(_ recorder: Recorder<StorageChange>) -> Set<String> {
        Set(recorder.received.compactMap { if case .add(let key) = $0 { key } else { nil } })
    }

    @Test("two stores whose observers mirror each other, written from two threads at once, do not deadlock",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func mirroredObservers() throws {
        let directory = TemporaryDirectory()
        let stores = try makeStores(2, in: directory)
        let rendezvous = Rendezvous(2)
        let seen = [Recorder<StorageChange>(), Recorder<StorageChange>()]
        for (index, store) in stores.enumerated() {
            let other = stores[1 - index]
            store.addStorageObserver(seen[index]) { recorder, _, change in
                recorder.append(change)
                guard case .add(let key) = change, !key.hasPrefix("mirror-") else { return }
                rendezvous.meet() // both threads are delivering now
                try? other.setObject(User(name: key, age: 1), forKey: "mirror-" + key)
            }
        }
        let problems = Recorder<String>()
        let writers: [@Sendable () -> Void] = (0..<2).map { index in
            { [stores] in
                let key = "k\(index)"
                do { try stores[index].setObject(User(name: key, age: 0), forKey: key) } catch { problems.append("\(error)") }
                // Returned: its change reached its store's observers, and the mirrored change, made on
                // this thread's delivery, reached the other store's.
                if !self.keys(seen[index]).contains(key) { problems.append("\(key) not yet seen by its store") }
                if !self.keys(seen[1 - index]).contains("mirror-" + key) { problems.append("mirror-\(key) not yet seen") }
            }
        }
        guard runOnThreads(writers) else {
            Issue.record("the writers deadlocked")
            return // the stores' deliveries are stuck: waiting on them would hang the test
        }
        #expect(problems.received.isEmpty, "\(problems.received)")
        #expect(keys(seen[0]) == ["k0", "mirror-k1"])
        #expect(keys(seen[1]) == ["k1", "mirror-k0"])
        // Later writers of either store are not stuck behind anything.
        let later: @Sendable () -> Void = { [stores] in try? stores[0].setObject(User(name: "later", age: 2), forKey: "mirror-later") }
        #expect(runOnThreads([later]))
        #expect(try stores[1].object(forKey: "mirror-k0").name == "k0")
        #expect(try stores[0].object(forKey: "mirror-k1").name == "k1")
    }

    @Test("a chain of observers A→B→C→A, written from three threads at once, does not deadlock",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func chainOfObservers() throws {
        let directory = TemporaryDirectory()
        let stores = try makeStores(3, in: directory)
        let rendezvous = Rendezvous(3)
        let seen = (0..<3).map { _ in Recorder<StorageChange>() }
        for (index, store) in stores.enumerated() {
            let next = stores[(index + 1) % 3]
            store.addStorageObserver(seen[index]) { recorder, _, change in
                recorder.append(change)
                guard case .add(let key) = change else { return }
                let hops = key.filter { $0 == "+" }.count
                if hops == 0 { rendezvous.meet() }
                // Around the whole ring and back into the store the key started in.
                if hops < 3 { try? next.setObject(User(name: key, age: hops), forKey: key + "+") }
            }
        }
        let problems = Recorder<String>()
        let writers: [@Sendable () -> Void] = (0..<3).map { index in
            { [stores] in
                do { try stores[index].setObject(User(name: "k\(index)", age: 0), forKey: "k\(index)") } catch {
                    problems.append("\(error)")
                }
            }
        }
        guard runOnThreads(writers) else {
            Issue.record("the writers deadlocked")
            return // the stores' deliveries are stuck: waiting on them would hang the test
        }
        #expect(problems.received.isEmpty, "\(problems.received)")
        for store in stores { store.waitForObservers() }
        for index in 0..<3 {
            // Store `index` holds its own key, and the others' after 1 and 2 hops, and its own after 3.
            let expected: Set<String> = ["k\(index)", "k\((index + 2) % 3)+", "k\((index + 1) % 3)++", "k\(index)+++"]
            #expect(keys(seen[index]) == expected, "store \(index)")
            #expect(Set(stores[index].allKeys) == expected)
        }
    }

    @Test("an observer writing into its own store from several threads: no deadlock, every echo seen once the writers returned",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func observerWritesIntoItsOwnStore() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let threads = 4, writesPerThread = 25
        let seen = Recorder<StorageChange>()
        storage.addStorageObserver(seen) { recorder, storage, change in
            recorder.append(change)
            guard case .add(let key) = change, !key.hasSuffix("-echo") else { return }
            try? storage.setObject(User(name: key, age: 1), forKey: key + "-echo")
        }
        let problems = Recorder<String>()
        let writers: [@Sendable () -> Void] = (0..<threads).map { thread in
            { [storage] in
                for index in 0..<writesPerThread {
                    let key = "t\(thread)-\(index)"
                    do { try storage.setObject(User(name: key, age: 0), forKey: key) } catch { problems.append("\(error)") }
                    // Its own change has been seen. Its echo has too when this thread delivered the
                    // change; when another thread was delivering, that thread delivers the echo too.
                    if !self.keys(seen).contains(key) { problems.append("\(key) unseen on return") }
                }
            }
        }
        guard runOnThreads(writers) else {
            Issue.record("the writers deadlocked")
            return // the stores' deliveries are stuck: waiting on them would hang the test
        }
        #expect(problems.received.isEmpty, "\(problems.received.prefix(5))")
        // Every writer has returned: every echo has been delivered (by the thread that ran its observer).
        #expect(seen.received.count == 2 * threads * writesPerThread)
        // Commit order: each key's echo is committed (and so seen) after the key.
        let order = seen.received.compactMap { if case .add(let key) = $0 { key } else { nil } }
        for key in order where key.hasSuffix("-echo") {
            let original = String(key.dropLast(5))
            #expect(order.firstIndex(of: original)! < order.firstIndex(of: key)!)
        }
    }

    @Test("mirrored stores written from many threads at once, each write mirrored, all delivered in commit order",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func mirroredStress() throws {
        let directory = TemporaryDirectory()
        let stores = try makeStores(2, in: directory)
        let seen = [Recorder<String>(), Recorder<String>()]
        for (index, store) in stores.enumerated() {
            let other = stores[1 - index]
            store.addStorageObserver(seen[index]) { recorder, _, change in
                guard case .add(let key) = change else { return }
                recorder.append(key)
                if !key.hasPrefix("mirror-") { try? other.setObject(User(name: key, age: 1), forKey: "mirror-" + key) }
            }
        }
        let writesPerThread = 40
        let writers: [@Sendable () -> Void] = (0..<4).map { thread in
            { [stores] in
                for index in 0..<writesPerThread {
                    try? stores[thread % 2].setObject(User(name: "x", age: index), forKey: "t\(thread)-\(index)")
                }
            }
        }
        guard runOnThreads(writers) else {
            Issue.record("the writers deadlocked")
            return // the stores' deliveries are stuck: waiting on them would hang the test
        }
        for index in 0..<2 {
            let keys = seen[index].received
            #expect(keys.count == 4 * writesPerThread, "store \(index)")
            #expect(Set(keys).count == keys.count, "a change delivered twice to store \(index)")
            // Each thread's writes to one store are committed in its order, so seen in its order.
            for thread in 0..<4 {
                let prefix = (thread % 2 == index ? "" : "mirror-") + "t\(thread)-"
                let indices = keys.filter { $0.hasPrefix(prefix) }.map { Int($0.dropFirst(prefix.count))! }
                #expect(indices == Array(0..<writesPerThread), "thread \(thread) in store \(index)")
            }
        }
    }
}
