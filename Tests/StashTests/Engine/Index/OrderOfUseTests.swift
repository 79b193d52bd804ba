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

/// The order of least recent use against a model: after sessions that only read, across a batch, and
/// with reads off the queue while compactions copy and write the key directory (Contract item 5).
@Suite("The order of least recent use against a model: reads, batches, compactions, reopens", .serialized)
struct OrderOfUseTests: ModelSessionScenario {
    @Test("a trim by maxSize after sessions that only read (uses files, made ready ahead) evicts the least recently used first",
          arguments: [11, 12, 13] as [UInt64])
    func evictionAfterReadOnlySessions(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<800).map { "key \($0)" }
        var model = Model()
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 200)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            for session in 0..<4 {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<(150 + random.below(400)) {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    #expect(try Self.read(storage, key) == model.values[key], "session \(session)")
                    model.use(key)
                }
                _ = storage.entryInfos
            }
            #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFolder.usesName), "no uses file was written")
            // Opened with room for about half: a write trims.
            let total = try openDataStore(path, now: clock.function).totalSize
            let storage = try openDataStore(path, maxSize: total / 2, now: clock.function)
            clock.advance(by: 1)
            let data = Self.value("new", 2, size: 200)
            try storage.setObject(data, forKey: "new")
            model.set("new", data)
            let kept = Set(storage.allKeys)
            #expect(kept.count < keys.count, "nothing was trimmed")
            let leastRecentWentFirst = model.trimmed(to: kept)
            #expect(leastRecentWentFirst, "the trim did not take the least recently used first")
            #expect(storage.entryInfos.map(\.key) == model.order)
        }
    }

    @Test("reads, a batch, then reads: the order of least recent use the store had at close is the one it has after the reopen",
          arguments: [16, Int.max])
    func readsAroundABatchKeepTheirOrder(builderMinimum: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: 77)
        let keys = (0..<600).map { "k\($0)" }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: builderMinimum, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, 1, size: 100), forKey: key)
                }
            }
            let order: [String]
            do {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<300 {
                    clock.advance(by: 0.001)
                    _ = try Self.read(storage, keys[random.below(keys.count)])
                }
                var batch: [String: Data] = [:]
                for _ in 0..<40 {
                    let key = keys[random.below(keys.count)]
                    batch[key] = Self.value(key, 2, size: 50)
                }
                clock.advance(by: 1)
                try storage.setObjects(batch)
                for _ in 0..<300 {
                    clock.advance(by: 0.001)
                    _ = try Self.read(storage, keys[random.below(keys.count)])
                }
                order = storage.entryInfos.map(\.key)
            }
            let storage = try openDataStore(path, now: clock.function)
            let reopened = storage.entryInfos.map(\.key)
            #expect(reopened == order, "builder minimum \(builderMinimum): the order changed across the close; first difference at \(Array(zip(reopened, order)).firstIndex { $0.0 != $0.1 } ?? -1) of \(order.count)")
        }
    }

    @Test("reads on another thread while compactNow copies and writes the key directory: every read counts as use, in the order made")
    func readsDuringCompactionDirectoryKeepTheirUses() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: 3)
        let keys = (0..<20_000).map { "c\($0)" }
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, 1, size: 60), forKey: key)
                }
            }
            let storage = try openDataStore(path, now: clock.function)
            var expected = storage.entryInfos.map(\.key)
            let reads = keys.shuffled(using: &random)
            var read: [String] = []
            for round in 0..<4 {
                let done = AtomicWord()
                let finished = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    defer { finished.signal() }
                    try? storage.compactNow()
                    done.store(1)
                }
                // Reads on this thread, off the queue, until the compaction (and the directory it writes) is over.
                while done.value == 0, read.count < reads.count {
                    let key = reads[read.count]
                    clock.advance(by: 0.001)
                    #expect(try Self.read(storage, key) == Self.value(key, 1, size: 60))
                    read.append(key)
                }
                finished.wait()
                _ = round
            }
            let readSet = Set(read)
            expected = expected.filter { !readSet.contains($0) } + read
            let inSession = storage.entryInfos.map(\.key)
            let firstDifference = Array(zip(inSession, expected)).firstIndex { $0.0 != $0.1 }
            #expect(firstDifference == nil,
                    "\(read.count) reads during compactions: the order differs at \(firstDifference ?? -1) of \(expected.count); \(Set(inSession.suffix(read.count)).subtracting(readSet).count) keys not read stand among the last \(read.count)")
        }
    }

    /// How the compactions beside the reads run.
    enum Compacting: String, CaseIterable, CustomTestStringConvertible {
        case writingDirectory = "background compactions that write the key directory"
        case removingDirectory = "background compactions of a store too small for a key directory"
        case none = "no compaction"
        var testDescription: String { rawValue }
    }

    /// Found by `randomSessions`: a background compaction's finish writes the key directory on the queue
    /// and then takes the directory it encoded as the index's base (``DiskStore/writeDirectory(thenLoad:durable:)``);
    /// the uses that reads off the queue marked in the index between the encoding and that swap are lost,
    /// in the session and (the close writes the index's uses) after every reopen. A trim then evicts keys
    /// just read before keys not read for long.
    @Test("reads off the queue while a background compaction finishes: every read counts as use, in the order made, and a trim evicts the least recently used",
          arguments: [1, 2, 3, 4] as [UInt64], Compacting.allCases)
    func readsDuringBackgroundCompactionKeepTheirOrder(seed: UInt64, compacting: Compacting) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try compacting.withThresholds(in: path) {
            var session = try ReadsBesideCompaction(path: path, seed: seed, compacting: compacting)
            let storage = try openDataStore(path, now: session.clock.function)
            var compactions = 0
            var differences = 0
            for round in 0..<6 {
                if try session.writeUntilCompacting(storage) { compactions += 1 }
                try session.readWhileCompacting(storage)
                let (order, model) = (storage.entryInfos.map(\.key), session.model)
                let first = Array(zip(order, model.order)).firstIndex { $0.0 != $0.1 }
                #expect(first == nil, "round \(round): the order differs from the reads' at \(first ?? -1) of \(order.count)")
                if first != nil {
                    differences += 1
                    // The most recently read keys the store holds as less recent than keys read before them.
                    let recent = Set(model.order.suffix(100))
                    let misplaced = order.prefix(order.count - 100).filter(recent.contains)
                    #expect(misplaced.isEmpty, "round \(round): \(misplaced.count) of the 100 keys read last are not among the store's 100 most recent: \(misplaced.prefix(5))")
                }
            }
            #expect((compactions > 0) == (compacting != .none), "compactions: \(compactions)")
            if differences == 0 {
                // A trim to a quarter keeps the most recently used.
                let target = session.model.totalSize / 4
                try storage.trim(toSize: target)
                session.model.trim(to: target)
                #expect(Set(storage.allKeys) == Set(session.model.values.keys), "the trim evicted other keys than the least recently used")
            }
        }
    }

    /// Found beside the test above: where the compaction writes no key directory (a store below its
    /// minimum), the order in the session is right but not after a reopen. The reads made while the copy
    /// ran noted access records against the inputs' positions; the finish drops those and notes one access
    /// record per entry used meanwhile, in the order the copy moved them (least recently used at its start),
    /// not the order of the reads, and after the accesses already noted against the copies' positions by
    /// reads made since the index was pointed at them (``Compaction/finish(_:victims:epoch:)``): the replay
    /// at the next open takes that order. Now every waiting access record is written in the order of use
    /// the index holds (``SegmentLog/putPendingAccessesInOrderOfUse()``).
    @Test("reads off the queue during background compactions: after a reopen the order of least recent use is the reads' order",
          arguments: [5, 6] as [UInt64], Compacting.allCases)
    func readsDuringBackgroundCompactionSurviveReopen(seed: UInt64, compacting: Compacting) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try compacting.withThresholds(in: path) {
            var session = try ReadsBesideCompaction(path: path, seed: seed, compacting: compacting)
            var inSession: [String] = []
            do {
                let storage = try openDataStore(path, now: session.clock.function)
                for _ in 0..<4 {
                    try session.writeUntilCompacting(storage)
                    try session.readWhileCompacting(storage)
                }
                inSession = storage.entryInfos.map(\.key)
            }
            let (reopened, model) = (try openDataStore(path, now: session.clock.function).entryInfos.map(\.key), session.model)
            let first = Array(zip(reopened, model.order)).firstIndex { $0.0 != $0.1 }
            #expect(first == nil, "after the reopen the order differs from the reads' at \(first ?? -1) of \(reopened.count) (in the session: \(inSession == model.order ? "the same" : "different already"))")
        }
    }

    /// Found in review: an access record names its entry by position and key hash; where the entry is in
    /// no key directory, the replay found the key at that position and took the record as its use without
    /// comparing the hash, so a record written for a folder since made anew (which places its records where
    /// the old one did) marked whatever key stands there now.
    @Test("an access record whose key hash is not that of the key at its position marks nothing at replay")
    func accessRecordOfAnotherKeyIsIgnored() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var now = Date(timeIntervalSinceReferenceDate: 800_000_000)
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        for key in ["a", "b"] {
            now += 1
            _ = try FilesChangedInPlaceTests.operation(store!) {
                try $0.writer.write(key, Data(repeating: 1, count: 100), expiry: .distantFuture, now: now, maxSize: 0, durable: false)
            }
        }
        var other = try #require(store!.record(forKey: "a"))
        other.keyHash ^= 1 // the place of "a", the hash of another key
        store!.log.pendingAccesses.append(SegmentLog.Access(other, time: StoredTime.seconds(now + 1), recency: 0))
        try FilesChangedInPlaceTests.operation(store!) { try $0.log.flushAccesses() }
        store = nil // killed: no close, so the next open replays the records
        let reopened = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        defer { reopened.close() }
        #expect(reopened.withIndex { $0.entriesOldestFirst.map(\.0) } == ["a", "b"])
    }

    /// Found in review: a reader off the queue marks its entry used in the index as it is, then notes that
    /// use in its stripe, where it waits with the recency the index gave it (``SegmentLog/Access``); the
    /// append writes the waiting uses sorted by recency. A key directory written meanwhile (the reader
    /// marked its entry between the encoding and the swap) replaced the index by the directory just
    /// written, whose next recency is above its live entries' only: below a use of an entry removed since,
    /// and below the uses made during the write. The uses made after the swap then sorted before those made
    /// during it, and a replay after a kill took the order wrong (as after a `removeAll` or a folder opened
    /// anew, where the new index starts from 0). Now an index that replaces another goes on from its
    /// recencies (``KeyDirectory/replace(with:)``): checked here where the next recency would go back.
    @Test("an index that replaces another (a key directory loaded after its write, a removeAll) goes on from its recencies")
    func recenciesGoOnAcrossIndexSwaps() throws {
        let directory = TemporaryDirectory()
        var now = Date(timeIntervalSinceReferenceDate: 800_000_000)
        let store = try DiskStore(directory: directory.storePath(), readOnly: false)
        defer { store.close() }
        for key in ["a", "b", "c", "d"] {
            now += 1
            _ = try store.writer.write(key, Data(repeating: 1, count: 100), expiry: .distantFuture, now: now, maxSize: 0, durable: false)
        }
        for _ in 0..<20 {
            for key in ["c", "b", "d"] {
                now += 1
                _ = try store.read(key, now: now)
            }
        }
        _ = try store.writer.remove("d") // the most recent use was of an entry gone now
        let before = store.withIndex { $0.nextRecency }
        try store.writeDirectory() // the index becomes the directory just written
        #expect(store.withIndex { $0.base != nil }, "the scenario needs the directory loaded as the index")
        #expect(store.withIndex { $0.nextRecency } >= before, "after the directory was loaded")
        let loaded = store.withIndex { $0.nextRecency }
        try store.writer.removeAll()
        #expect(store.withIndex { $0.nextRecency } >= loaded, "after a removeAll")
    }
}

extension OrderOfUseTests.Compacting {
    /// Runs `body` with the thresholds that make these compactions run beside the reads.
    func withThresholds(in path: String, _ body: () throws -> Void) throws {
        try withEngineThresholds(in: path, compactionMinimum: self == .none ? 1 << 40 : 16 << 10,
                                 directoryMinimum: self == .writingDirectory ? 1 : 1 << 30, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0, body)
    }
}

/// Writes until a background compaction starts, then reads off the queue while it copies and finishes,
/// with a model of values and order: 600 keys, written once when it is made.
private struct ReadsBesideCompaction: ModelSessionScenario {
    let clock = TestClock()
    let keys = (0..<600).map { "k\($0)" }
    let compacting: OrderOfUseTests.Compacting
    var random: SeededGenerator
    var model = StoreModel()
    var version = 1

    init(path: String, seed: UInt64, compacting: OrderOfUseTests.Compacting) throws {
        (random, self.compacting) = (SeededGenerator(seed: seed), compacting)
        let storage = try openDataStore(path, now: clock.function)
        for key in keys {
            clock.advance(by: 1)
            let data = Self.value(key, 1, size: 100)
            try storage.setObject(data, forKey: key)
            model.set(key, data)
        }
    }

    /// Writes random keys until a background compaction runs (a bounded number); whether one does.
    @discardableResult
    mutating func writeUntilCompacting(_ storage: DiskStorage<Data>) throws -> Bool {
        var writes = 0
        while !storage.isCompacting, writes < (compacting == .none ? 300 : 2_000) {
            let key = keys[random.below(keys.count)]
            version += 1
            clock.advance(by: 1)
            let data = Self.value(key, version, size: 100 + random.below(50))
            try storage.setObject(data, forKey: key)
            model.set(key, data)
            writes += 1
        }
        return storage.isCompacting
    }

    /// Reads random keys off the queue while the compaction copies and finishes, then waits for it.
    mutating func readWhileCompacting(_ storage: DiskStorage<Data>) throws {
        for _ in 0..<3_000 {
            let key = keys[random.below(keys.count)]
            clock.advance(by: 0.001)
            #expect(try Self.read(storage, key) == model.values[key])
            model.use(key)
        }
        storage.waitForCompaction()
    }
}
