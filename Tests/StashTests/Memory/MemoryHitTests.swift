import Dispatch
import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Memory hits are served under the memory layer's lock, off the store's queue (Contract item 4 and
/// "Performance"): they must neither wait for the queue nor ever return what a finished write replaced.
@Suite("Memory hits off the queue")
struct MemoryHitTests {
    // Contract 4: a memory hit does not go through the serial queue.
    @Test("object(forKey:) answers a memory hit while the store's queue is blocked")
    func hitWhileQueueIsBlocked() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "k")
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        storage.hybridStorage.engine.async { _ in
            blocked.signal()
            release.wait()
        }
        blocked.wait()
        defer { release.signal() }
        let answered = DispatchSemaphore(value: 0)
        let result = Locked<User?>(nil)
        Thread { // a thread of its own: under load the global queue may have none left
            let user = try? storage.object(forKey: "k")
            result.withLock { $0 = user }
            answered.signal()
        }.start()
        // The queue stays blocked until the test ends: a read that waited for it would time out here.
        #expect(answered.wait(timeout: TestDeadline.fromNow) == .success)
        #expect(result.withLock { $0 } == User(name: "a", age: 1))
    }

    // Contract 4: operations are linearizable — once a write has returned, no read returns an older value.
    @Test("readers on other threads never see a value older than one they saw, nor older than a returned write")
    func readsAreMonotonicUnderWrites() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "v", age: 0), forKey: "k")
        let written = Locked(0) // the last write that has returned
        let writes = 300
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { thread in
            if thread == 0 {
                for version in 1...writes {
                    do {
                        try storage.setObject(User(name: "v", age: version), forKey: "k")
                    } catch {
                        failures.withLock { $0.append("write \(version): \(error)") }
                    }
                    written.withLock { $0 = version }
                }
            } else {
                var seen = 0
                while seen < writes {
                    let floor = written.withLock { $0 }
                    let age: Int
                    do {
                        age = try storage.object(forKey: "k").age
                    } catch {
                        failures.withLock { $0.append("read: \(error)") }
                        return
                    }
                    if age < seen || age < floor {
                        failures.withLock { $0.append("read \(age) after seeing \(seen), with \(floor) written") }
                        return
                    }
                    seen = age
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
    }

    @Test("a memory copy of another view's type is a miss: the value is decoded from disk")
    func otherViewsTypeFallsBackToDisk() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let user = User(name: "a", age: 1)
        try storage.setObject(user, forKey: "k")
        let data = try storage.transformData().object(forKey: "k")
        #expect(try JSONDecoder().decode(User.self, from: data) == user)
        #expect(try storage.object(forKey: "k") == user)
    }

    // Contract 2: an expired value in memory is not returned as valid.
    @Test("an expired memory copy throws expired with its date from object(forKey:)")
    func expiredHitThrows() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(User(name: "a", age: 1), forKey: "k", expiry: .seconds(10))
        #expect(try storage.object(forKey: "k").age == 1)
        clock.advance(by: 10)
        let error = storageError { _ = try storage.object(forKey: "k") }
        guard case .expired(let date, _) = error else {
            Issue.record("expected expired, got \(String(describing: error))")
            return
        }
        #expect(date == clock.now)
        #expect(try storage.entry(forKey: "k").isExpired)
    }

    // MARK: async/await (contract 4, issue #10 item 8)

    // Contract 4: the async functions answer a memory hit without the queue (no thread hop).
    @Test("async object, entry, existsObject and isExpiredObject answer a memory hit while the store's queue is blocked",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func asyncHitWhileQueueIsBlocked() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let user = User(name: "a", age: 1)
        try storage.setObject(user, forKey: "k")
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        let releasedByWatchdog = Locked(false)
        storage.hybridStorage.engine.async { _ in
            blocked.signal()
            release.wait()
        }
        blocked.wait()
        // Only if a read waits for the queue (the bug) does this ever fire: it frees the queue so the
        // test ends with a failure instead of hanging. The reads below never block this task's thread.
        DispatchQueue.global().asyncAfter(deadline: TestDeadline.fromNow) {
            releasedByWatchdog.withLock { $0 = true }
            release.signal()
        }
        let object = try await storage.async.object(forKey: "k")
        let entry = try await storage.async.entry(forKey: "k")
        let exists = try await storage.async.existsObject(forKey: "k")
        let expired = try await storage.async.isExpiredObject(forKey: "k")
        #expect(!releasedByWatchdog.withLock { $0 }, "a read waited for the blocked queue")
        release.signal()
        #expect(object == user && entry.object == user && exists && !expired)
    }

    // Contract 4: an async read does not overtake an async write submitted before it (the fast path
    // is taken only while no async mutation is pending).
    @Test("an async read submitted after an async write that is still running returns the written value",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func asyncReadDoesNotOvertakeEarlierWrite() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "old", age: 1), forKey: "k")
        let writing = DispatchSemaphore(value: 0)
        let gate = DispatchSemaphore(value: 0)
        // A view whose encoding (run on the queue, inside the write) holds the write until the read is submitted.
        let slow = storage.transform(transformer: Transformer<User>(
            toData: { user in
                writing.signal()
                gate.wait()
                return try JSONEncoder().encode(user)
            },
            fromData: { try JSONDecoder().decode(User.self, from: $0) }
        ))
        let written = DispatchSemaphore(value: 0)
        slow.async.setObject(User(name: "new", age: 2), forKey: "k") { _ in written.signal() }
        writing.wait() // the write is running on the queue; memory still holds "old"
        #expect(!storage.hybridStorage.engine.pendingAsyncMutations.isEmpty)

        let started = Locked(false)
        let read = Task {
            started.withLock { $0 = true }
            return try await storage.async.object(forKey: "k").name // must wait for the write
        }
        while !started.withLock({ $0 }) { await Task.yield() } // (yields: the read task may need this thread)
        gate.signal()
        #expect(try await read.value == "new")
        written.wait()
        #expect(storage.hybridStorage.engine.pendingAsyncMutations.isEmpty)
        #expect(try await storage.async.object(forKey: "k").name == "new") // and now from memory
    }

    // Contract 5: memory hits count as use, in the order they were made, also from several threads
    // (each thread records its hits in a slot of its own; the disk takes them all, merged by stamp).
    @Test("the memory hits of several threads reach the disk in the order they were made")
    func hitsOfSeveralThreadsInOrder() throws {
        let cache = MemoryCache(config: MemoryConfig())
        cache.trackHits()
        let now = Date()
        let keys = (0..<12).map { "k\($0)" }
        for key in keys { cache.set(MemoryCache.Item(object: ValueBox(0), cost: 1, expiry: .distantFuture, dropAfter: .distantFuture,
                                                     filePath: nil), forKey: key) }
        // One new thread per hit, each joined before the next: consecutive threads use different slots.
        for key in keys {
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = cache.hit(forKey: key, now: now)
                done.signal()
            }.start()
            done.wait()
        }
        #expect(cache.takeRecentHits() == keys)
        #expect(cache.takeRecentHits().isEmpty)
    }
}
