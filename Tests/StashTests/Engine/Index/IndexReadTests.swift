import Dispatch
import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `existsObject` and `isExpiredObject` are answered from the disk index under its own lock, off the
/// store's queue (Contract item 4 and "Performance"); a change to several keys must still be seen
/// entirely or not at all by such readers.
extension MemoryHitTests {
    // Contract 4 / performance: existsObject with cold memory does not go through the serial queue.
    @Test("existsObject and isExpiredObject answer from the index while the store's queue is blocked")
    func indexAnswersWhileQueueIsBlocked() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        // Written to disk only: memory is cold for these keys.
        let disk = storage.hybridStorage.diskStorage
        try disk.setObject(User(name: "a", age: 1), forKey: "live")
        try disk.setObject(User(name: "b", age: 2), forKey: "stale", expiry: .seconds(10))
        clock.advance(by: 20)
        let release = DispatchSemaphore(value: 0)
        let blocked = DispatchSemaphore(value: 0)
        storage.hybridStorage.engine.async { _ in
            blocked.signal()
            release.wait()
        }
        blocked.wait()
        defer { release.signal() }
        let answered = DispatchSemaphore(value: 0)
        let answers = Locked<[String]>([])
        // A thread of its own: under load the global queue may have no thread left for it.
        Thread {
            let found = [
                "live \((try? storage.existsObject(forKey: "live")) == true)",
                "stale \((try? storage.existsObject(forKey: "stale")) == true)",
                "missing \((try? storage.existsObject(forKey: "missing")) == true)",
                "stale expired \((try? storage.isExpiredObject(forKey: "stale")) == true)",
                "live expired \((try? storage.isExpiredObject(forKey: "live")) == true)",
                "missing notFound \(storageError { _ = try storage.isExpiredObject(forKey: "missing") }?.isNotFound == true)",
            ]
            answers.withLock { $0 = found }
            answered.signal()
        }.start()
        // The queue stays blocked until the test ends: an answer that waited for it would time out here.
        #expect(answered.wait(timeout: TestDeadline.fromNow) == .success)
        #expect(answers.withLock { $0 } == [
            "live true", "stale false", "missing false",
            "stale expired true", "live expired false", "missing notFound true",
        ])
    }

    // Contract 4: removeAll and trimming remove several keys in one operation; a reader off the
    // queue must never see one of them gone and then another still there.
    @Test("a reader off the queue sees a removal of several keys entirely or not at all",
          arguments: ["removeAll", "trim"])
    func multiKeyRemovalIsAtomicForIndexReaders(_ operation: String) throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let disk = storage.hybridStorage.diskStorage
        let failures = Locked<[String]>([])
        for round in 0..<60 {
            // "memory" is in this storage's memory layer, "disk" only on disk: a reader finds the
            // first in memory and the second in the index.
            try storage.setObject(User(name: "m", age: round), forKey: "memory")
            try disk.setObject(User(name: "d", age: round), forKey: "disk")
            let started = DispatchSemaphore(value: 0)
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                if thread == 0 {
                    started.wait()
                    do {
                        if operation == "removeAll" { try storage.removeAll() } else { try disk.trim(toSize: 0) }
                    } catch {
                        failures.withLock { $0.append("round \(round): \(error)") }
                    }
                } else {
                    started.signal()
                    while true {
                        let diskKey = (try? storage.existsObject(forKey: "disk")) ?? true
                        let memoryKey = (try? storage.existsObject(forKey: "memory")) ?? true
                        if !diskKey, memoryKey {
                            failures.withLock { $0.append("round \(round): \"disk\" was gone, then \"memory\" still there") }
                            return
                        }
                        if !diskKey, !memoryKey { return }
                    }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
    }
}
