import Dispatch
import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// Synchronous calls take the store's turn directly while no async operation waits on its queue
/// (`DiskEngine.run`): the order of Contract item 4 must hold all the same, with threads contending.
@Suite("Writes from several threads in turn")
struct ContendedWriteTests {
    /// Each thread writes keys of its own, synchronously and through the async API, and reads them
    /// back synchronously (through the `Storage`, whose memory holds few values, and through a
    /// `DiskStorage` on the same folder); it also reads the other threads' keys. Against a model:
    /// a thread reads back the last value it submitted for its key, async or not (an async write
    /// submitted before a synchronous call is visible to it, a later synchronous write replaces it),
    /// and the values it sees of another thread's key never go back (each thread's writes apply in
    /// its order). The transformer calls back into the store from inside the store's operations.
    @Test("sync writes, async writes and sync reads from 2 to 8 threads: each thread's writes apply in its order",
          arguments: [2, 8])
    func eachThreadsWritesInItsOrder(threads: Int) throws {
        let directory = TemporaryDirectory()
        let box = DataStorageBox()
        let transformer = Transformer<Data>(toData: { $0 }, fromData: { data in
            _ = try? box.storage?.existsObject(forKey: "none") // a call back in, inline
            return data
        })
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 4),
                                        transformer: transformer)
        box.storage = storage
        let disk = try DiskStorage<Data>(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        let keysPerThread = 3
        let steps = 300
        let failures = Locked<[String]>([])
        let asyncWrites = DispatchGroup()
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                defer { done.leave() }
                var random = SeededGenerator(seed: UInt64(thread) &+ 77)
                var mine = [Int](repeating: -1, count: keysPerThread) // the last value submitted per key
                var seen = [Int: Int]() // another thread's key → the highest value read of it
                @Sendable func fail(_ message: String) { failures.withLock { $0.append("thread \(thread): \(message)") } }
                for step in 0..<steps {
                    let slot = random.below(keysPerThread)
                    let key = "t\(thread)-\(slot)"
                    do {
                        switch random.below(6) {
                        case 0, 1:
                            try storage.setObject(Self.value(step), forKey: key)
                            mine[slot] = step
                        case 2:
                            asyncWrites.enter()
                            storage.async.setObject(Self.value(step), forKey: key) { result in
                                if case .failure(let error) = result { fail("async set: \(error)") }
                                asyncWrites.leave()
                            }
                            mine[slot] = step
                        case 3, 4:
                            guard mine[slot] >= 0 else { continue }
                            let read = random.below(2) == 0 ? try storage.object(forKey: key) : try disk.object(forKey: key)
                            let found = Self.number(read)
                            if found != mine[slot] { fail("\(key): read \(found) after submitting \(mine[slot])") }
                        default:
                            let other = random.below(threads)
                            guard other != thread else { continue }
                            let otherKey = "t\(other)-\(random.below(keysPerThread))"
                            guard let read = try? storage.object(forKey: otherKey) else { continue } // not written yet
                            let found = Self.number(read)
                            let index = other * keysPerThread + Int(otherKey.last!.wholeNumberValue!)
                            if found < seen[index, default: -1] { fail("\(otherKey): read \(found) after \(seen[index]!)") }
                            seen[index] = found
                        }
                    } catch {
                        fail("step \(step): \(error)")
                    }
                }
            }.start()
        }
        done.wait()
        asyncWrites.wait()
        let found = failures.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) wrong answers; the first: \(found.prefix(5))")
        #expect(!storage.hybridStorage.engine.isOnQueue)
    }

    /// The value written at `step`: its number, then padding so some reads are of larger records.
    static func value(_ step: Int) -> Data {
        Data("\(step):".utf8) + Data(repeating: UInt8(step & 0x7F), count: step % 3 == 0 ? 300 : 20)
    }

    static func number(_ data: Data) -> Int {
        Int(String(decoding: data.prefix { $0 != UInt8(ascii: ":") }, as: UTF8.self)) ?? -2
    }
}

private final class DataStorageBox: @unchecked Sendable {
    // @unchecked Sendable: set once, before the threads that read it start.
    var storage: Storage<Data>?
}
