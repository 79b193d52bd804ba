import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Held-out attacks on the disk engine v4: the order of least recent use across memory hits, reads off
/// the queue on several threads and reads on the queue (Contract item 5).
@Suite("The order of use across memory hits, reads off the queue and reads on it", .serialized)
struct OrderOfUseAcrossLayersTests: HeldOutSessionScenario {
    /// A `Storage` with a small memory layer reads on one thread, some keys from memory, some from disk
    /// off the queue, in sessions that only read (a uses file made ready and written at close) or also
    /// write (a directory kept as they go): after each reopen, the disk's order of least recent use is
    /// the order of the reads and writes (Contract item 5: memory hits count as use, and the order
    /// survives a restart).
    @Test("memory hits and disk reads of one thread, in sessions that only read or also write: after each reopen the order of least recent use is the order of use",
          arguments: [0, 1] as [Int])
    func memoryHitsAndDiskReadsKeepOneOrder(variant: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let keys = (0..<800).map { "h\($0)" }
        var random = SeededGenerator(seed: 40 + UInt64(variant))
        var order: [String] = []
        func use(_ key: String) {
            order.removeAll { $0 == key }
            order.append(key)
        }
        try withEngineThresholds(in: path, directoryMinimum: 1, segmentLimit: 64 << 10, directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, length: 80), forKey: key)
                    use(key)
                }
            }
            var version = 1
            for session in 0..<6 {
                do {
                    let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 120),
                                                    transformer: TransformerFactory.forData(), now: clock.function)
                    let writes = session % 2 == variant
                    for _ in 0..<900 {
                        clock.advance(by: 0.01)
                        // A hot set read often (memory hits), and the rest (disk reads).
                        let key = random.below(2) == 0 ? keys[random.below(60)] : keys[random.below(keys.count)]
                        if writes, random.below(4) == 0 {
                            version += 1
                            try storage.setObject(Self.value(key, length: 80 + version), forKey: key)
                        } else {
                            #expect(try storage.object(forKey: key).starts(with: Data("\(key)#".utf8)))
                        }
                        use(key)
                    }
                }
                let reopened = try openDataStore(path, now: clock.function).entryInfos.map(\.key)
                let first = Array(zip(reopened, order)).firstIndex { $0.0 != $0.1 }
                #expect(first == nil, "after session \(session) (\(session % 2 == variant ? "reads and writes" : "reads alone")): the order differs from the order of use at \(first ?? -1) of \(reopened.count): store \(first.map { Array(reopened[$0..<min($0 + 4, reopened.count)]) } ?? []), uses \(first.map { Array(order[$0..<min($0 + 4, order.count)]) } ?? [])")
                if first != nil { break }
            }
        }
    }

    /// The smallest case of the test above. Found by it: a memory hit of `a` made before a disk read of `c`
    /// counted, on disk, as if made after it (the hit waited in the memory layer until the disk took the
    /// hits, and then got the next recency), so a trim to one value kept `a` and evicted `c`. Now each disk
    /// read takes the hits waiting before it marks its own entry.
    @Test("a memory hit made before a disk read counts as use before it: a trim keeps the key read last", arguments: [false, true])
    func memoryHitBeforeADiskRead(afterReopen: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        do {
            let storage = try Self.storageOverABC(directory, clock)
            clock.advance(by: 1)
            _ = try storage.object(forKey: "a") // from disk; now in memory
            clock.advance(by: 1)
            _ = try storage.object(forKey: "b") // from disk
            clock.advance(by: 1)
            _ = try storage.object(forKey: "a") // a memory hit
            clock.advance(by: 1)
            _ = try storage.object(forKey: "c") // from disk: the most recent use
            if !afterReopen {
                let disk = try openDataStore(path, now: clock.function) // the same engine
                #expect(disk.entryInfos.map(\.key) == ["b", "a", "c"], "the order of use in the session")
                try disk.trim(toSize: 100)
                #expect(disk.allKeys == ["c"], "a trim to one value keeps the key used last")
                return
            }
        }
        let reopened = try openDataStore(path, now: clock.function)
        #expect(reopened.entryInfos.map(\.key) == ["b", "a", "c"], "the order of use after a reopen")
        try reopened.trim(toSize: 100)
        #expect(reopened.allKeys == ["c"], "a trim to one value keeps the key used last")
    }

    /// A disk read off the queue takes the memory layer's waiting hits before it looks at the index; when
    /// it finds the index being rebuilt (``DiskStore/indexGeneration`` odd, as while a store opens its folder
    /// anew) it marks nothing and the read goes to the queue. Found in review: the hits it took were dropped
    /// there, so the key hit in memory counted as unused. Now the queue counts them before its read.
    @Test("a memory hit taken by a disk read that finds the index being rebuilt still counts, before that read")
    func memoryHitTakenWhileTheIndexIsRebuilt() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let storage = try Self.storageOverABC(directory, clock)
        let disk = try openDataStore(path, now: clock.function) // the same engine
        clock.advance(by: 1)
        _ = try storage.object(forKey: "a") // from disk; now in memory
        clock.advance(by: 1)
        _ = try storage.object(forKey: "b") // from disk
        clock.advance(by: 1)
        _ = try storage.object(forKey: "a") // a memory hit, waiting
        let store = disk.engine.store
        func bumpGeneration() { store.withIndex { _ in store.indexGeneration.store(store.indexGeneration.value &+ 1) } }
        bumpGeneration() // odd: as while the index is rebuilt
        clock.advance(by: 1)
        _ = try storage.object(forKey: "c") // from disk, on the queue: the most recent use
        bumpGeneration()
        #expect(disk.entryInfos.map(\.key) == ["b", "a", "c"], "the memory hit counts, before the read made after it")
    }

    /// Found in review: a disk read off the queue that finds no key still notes the memory hits it took in
    /// its thread's stripe; when that filled the stripe, the request to write them went with the answer
    /// (only a read that found its key passed it on), and the uses waited for the next write.
    @Test("memory hits taken by disk reads that find nothing are written once their stripe is full, as reads are")
    func hitsTakenByReadsOfMissingKeysAreWritten() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let storage = try Self.storageOverABC(directory, clock)
        let engine = try openDataStore(path, now: clock.function).engine // the same engine
        _ = try storage.object(forKey: "a") // from disk; now in memory
        let appends = engine.store.log.appendCount
        for _ in 0..<SegmentLog.offQueueAccessLimit {
            clock.advance(by: 1)
            _ = try storage.object(forKey: "a") // a memory hit
            #expect(throws: StorageError.self) { try storage.object(forKey: "missing") } // takes the hit, finds nothing
        }
        engine.sync { _ in } // after the write the reads asked for
        #expect(engine.store.log.appendCount > appends, "the uses noted off the queue were written")
    }

    /// Without a memory layer: reads off the queue leave their access records waiting in the stripes,
    /// and a read on the queue made after them (inside a transaction) notes its own at once; when they
    /// are written, the stripes' go after the queue's (``SegmentLog/takeOffQueueAccesses()`` appends
    /// them to the pending ones), so the replay at the next open counts the earlier reads as the later.
    @Test("reads off the queue, then a read on the queue (a transaction's): after a reopen the order of least recent use is the reads' order")
    func offQueueReadsThenAReadOnTheQueue() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        try Self.writeABC(path, clock)
        do {
            let disk = try openDataStore(path, now: clock.function)
            clock.advance(by: 1)
            _ = try disk.object(forKey: "a") // off the queue
            clock.advance(by: 1)
            _ = try disk.object(forKey: "b") // off the queue
            clock.advance(by: 1)
            _ = try disk.transaction { try $0.object(forKey: "a") } // on the queue: the most recent use
            #expect(disk.entryInfos.map(\.key) == ["c", "b", "a"], "the order of use in the session")
        }
        let reopened = try openDataStore(path, now: clock.function)
        #expect(reopened.entryInfos.map(\.key) == ["c", "b", "a"], "the order of use after a reopen")
        try reopened.trim(toSize: 100)
        #expect(reopened.allKeys == ["a"], "a trim to one value keeps the key used last")
    }

    /// Reads off the queue made one after the other on different threads (each thread starts once the
    /// one before ended): their access records wait in the stripe of their thread, and are written stripe
    /// after stripe, not in the order made; a replay at the next open then takes the stripes' order.
    @Test("reads off the queue made one after the other, each on a thread of its own: after a reopen the order of least recent use is the reads' order")
    func offQueueReadsOnThreadsInTurn() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<16).map { "t\($0)" }
        do {
            let disk = try openDataStore(path)
            for key in keys { try disk.setObject(Data(repeating: 1, count: 100), forKey: key) }
        }
        let readOrder = Array(keys.reversed())
        do {
            let disk = try openDataStore(path)
            for key in readOrder {
                // A thread of its own for each read, started once the read before returned.
                let ended = DispatchSemaphore(value: 0)
                let reader = Thread {
                    _ = try? disk.object(forKey: key)
                    ended.signal()
                }
                reader.start()
                #expect(ended.wait(timeout: TestDeadline.fromNow) == .success)
            }
            #expect(disk.entryInfos.map(\.key) == readOrder, "in the session")
        }
        let reopened = try openDataStore(path).entryInfos.map(\.key)
        #expect(reopened == readOrder, "after a reopen")
    }

    /// Writes `a`, `b` and `c` (100 bytes each), in that order, into a new store at `path`, and closes it.
    /// A `Storage` with a memory layer in front of the store ``writeABC(_:_:)`` writes.
    static func storageOverABC(_ directory: TemporaryDirectory, _ clock: TestClock) throws -> Storage<Data> {
        try writeABC(directory.storePath(), clock)
        return try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 10),
                                 transformer: TransformerFactory.forData(), now: clock.function)
    }

    static func writeABC(_ path: String, _ clock: TestClock) throws {
        let disk = try openDataStore(path, now: clock.function)
        for key in ["a", "b", "c"] {
            clock.advance(by: 1)
            try disk.setObject(Data(repeating: 1, count: 100), forKey: key)
        }
    }
}
