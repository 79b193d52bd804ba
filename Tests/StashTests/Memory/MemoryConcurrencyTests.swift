import Dispatch
import Foundation
import Testing
@testable import Stash
@testable import StashEngine
import StashTestSupport

/// The memory layer read and written from many threads at once: hits take only their thread's slot
/// (`SlottedLock`) and mark use with a stamp, writes take every slot. Contract items 4 and 5 must hold
/// all the same. Runs under ThreadSanitizer in `.ci/run`.
@Suite("Memory layer from many threads")
struct MemoryConcurrencyTests {
    static let threads = 8
    static let keyCount = 48
    static let countLimit = 16
    static let costLimit = 60

    /// Values name their key and the version its writer gave them: `key * 1_000_000 + version`.
    static func value(key: Int, version: Int) -> Int { key * 1_000_000 + version }

    // Contracts 4 and 5: every thread reads every key while each writes and removes its own keys.
    @Test("hits from 8 threads beside sets and removes keep both limits and answer only what a model allows")
    func hitsBesideWritesMatchModel() throws {
        let memory = MemoryStorage<Int>(config: MemoryConfig(countLimit: Self.countLimit, totalCostLimit: Self.costLimit))
        // Per key, the version its one writer (thread `key % threads`) last started to write; -1 before the first.
        let started = Locked([Int](repeating: -1, count: Self.keyCount))
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            var random = SeededGenerator(seed: 0x5107_0000 + UInt64(thread))
            var seen = [Int](repeating: -1, count: Self.keyCount) // the newest version this thread read
            let owned = Array(stride(from: thread, to: Self.keyCount, by: Self.threads))
            func fail(_ message: String) { failures.withLock { $0.append("thread \(thread): \(message)") } }
            for step in 0..<1_500 {
                let choice = random.below(100)
                if choice < 20 {
                    let key = owned[random.below(owned.count)]
                    let version = step + 1
                    started.withLock { $0[key] = version }
                    do {
                        try memory.setObject(Self.value(key: key, version: version), forKey: "k\(key)", expiry: nil,
                                             cost: random.below(8))
                    } catch {
                        fail("set k\(key): \(error)")
                    }
                    // Our own write returned: we read it, or nothing (evicted), never an older value.
                    if let read = try? memory.object(forKey: "k\(key)"), read != Self.value(key: key, version: version) {
                        fail("k\(key) read \(read) after writing version \(version)")
                    }
                } else if choice < 25 {
                    let key = owned[random.below(owned.count)]
                    memory.removeObject(forKey: "k\(key)")
                    if let read = try? memory.object(forKey: "k\(key)") { fail("k\(key) read \(read) after removing it") }
                } else {
                    let key = random.below(Self.keyCount)
                    guard let read = try? memory.object(forKey: "k\(key)") else { continue }
                    // Looked at after the read: a version read had been started before it was written.
                    let limit = started.withLock { $0[key] }
                    let version = read - key * 1_000_000
                    if read / 1_000_000 != key || version < 1 || version < seen[key] || version > limit {
                        fail("k\(key) read \(read): newest seen \(seen[key]), last version started \(limit)")
                    }
                    seen[key] = version
                }
                let (count, cost) = (memory.count, memory.totalCost)
                if count > Self.countLimit || cost > Self.costLimit { fail("count \(count), cost \(cost) over the limits") }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(10) })")
        #if DEBUG
        #expect(memory.cache.checkInvariants())
        #endif
        #expect(memory.count <= Self.countLimit && memory.totalCost <= Self.costLimit)

        // After them, eviction is exactly least recently used again (writes stamp past every thread's hits).
        memory.removeAll()
        for index in 0..<Self.countLimit { try memory.setObject(index, forKey: "fresh\(index)", expiry: nil, cost: 1) }
        for index in stride(from: 0, to: Self.countLimit, by: 2) { _ = try memory.object(forKey: "fresh\(index)") }
        for index in 0..<(Self.countLimit / 2) { try memory.setObject(index, forKey: "new\(index)", expiry: nil, cost: 1) }
        let expected = Set(stride(from: 0, to: Self.countLimit, by: 2).map { "fresh\($0)" } + (0..<(Self.countLimit / 2)).map { "new\($0)" })
        #expect(Set(memory.allKeys) == expected)
    }

    // Contract 5: a read on another thread is a use, in the order the reads were made.
    @Test("reads made on other threads, one after the other, count as use in that order")
    func readsOnOtherThreadsCountInOrder() throws {
        let memory = MemoryStorage<String>(config: MemoryConfig(countLimit: 3))
        for key in ["a", "b", "c"] { try memory.setObject(key, forKey: key) }
        for key in ["a", "b"] { // a, then b, each on a thread of its own: c is now the least recently used
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = try? memory.object(forKey: key)
                done.signal()
            }.start()
            #expect(done.wait(timeout: TestDeadline.fromNow) == .success)
        }
        try memory.setObject("d", forKey: "d")
        #expect(Set(memory.allKeys) == ["a", "b", "d"])
        try memory.setObject("e", forKey: "e")
        #expect(Set(memory.allKeys) == ["b", "d", "e"])
    }
}
