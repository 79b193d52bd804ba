import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The hot path (Docs/Architecture.md, "The hot path"): the non-generic queue hop, records encoded
/// in place, reads that compare the stored key in place, and the folder-loss check; each keeps the
/// behaviour it replaced.
@Suite("The hot path")
struct HotPathTests {
    // Contract 4: a sync call made from the queue itself runs inline. Hybrid reads decode on the
    // queue; DiskStorage reads decode on the caller's thread: neither may deadlock when the decoder
    // calls back into the store through the queue (`allKeys`, `totalSize`, `entryInfos`).
    @Test("a decoder that calls the store through its queue does not deadlock, on disk reads with and without memory")
    func reentrantDecoder() throws {
        let directory = TemporaryDirectory()
        let box = ReentryBox()
        let transformer = Transformer<String>(
            toData: { value in
                box.touch()
                return Data(value.utf8)
            },
            fromData: { data in
                box.touch()
                return String(decoding: data, as: UTF8.self)
            }
        )
        let storage = try Storage<String>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 1),
                                          transformer: transformer)
        let disk = storage.hybridStorage.diskStorage
        box.set(storage, disk)
        try storage.setObject("value", forKey: "k")
        try storage.setObject("x", forKey: "evicts-k-from-memory")
        #expect(try storage.object(forKey: "k") == "value") // a disk read: decoded on the queue
        #expect(try storage.entry(forKey: "evicts-k-from-memory").object == "x")
        #expect(try disk.object(forKey: "k") == "value") // decoded off the queue
        #expect(try disk.entry(forKey: "k").object == "value")
        #expect(box.calls > 0)
    }

    // Storage's disk read without an Entry<T>: the value is decoded and remembered on the queue,
    // expiry is judged as before, and another view's copy in memory is a miss that reads the disk.
    @Test("a Storage disk read: remembered, expired after its date, another view's memory copy a miss")
    func storageDiskRead() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: 1), clock: clock)
        try storage.setObject(User(name: "a", age: 1), forKey: "a", expiry: .seconds(10))
        try storage.setObject(User(name: "b", age: 2), forKey: "b") // evicts "a" from memory
        #expect(storage.hybridStorage.cache.item(forKey: "a", now: clock.now) == nil)
        #expect(try storage.object(forKey: "a") == User(name: "a", age: 1)) // from disk
        #expect(storage.hybridStorage.cache.item(forKey: "a", now: clock.now) != nil, "the disk hit was not remembered")
        try storage.setObject(User(name: "b", age: 2), forKey: "b") // evicts "a" again
        clock.advance(by: 10)
        let expiry = try #require(storageError { _ = try storage.object(forKey: "a") })
        guard case .expired(let date, _) = expiry else {
            Issue.record("expected expired, got \(expiry)")
            return
        }
        #expect(date == ManualClock.defaultStart.addingTimeInterval(10))

        // A Data view shares the memory layer: its copy of "b" is a miss for the User view.
        let data = storage.transformData()
        _ = try data.object(forKey: "b")
        #expect(try storage.object(forKey: "b") == User(name: "b", age: 2))
    }

    // A sync call from work already on the queue (an `async` body) runs inline too.
    @Test("a sync call from work running on the store's queue runs inline")
    func syncFromQueueRunsInline() async throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        try disk.setObject(Data("v".utf8), forKey: "k")
        let engine = disk.engine
        let keys: [String] = await withCheckedContinuation { continuation in
            engine.async { _ in
                // Nested hops: each runs inline on the queue.
                let keys = engine.sync { store in engine.sync { _ in store.keys } }
                continuation.resume(returning: keys)
            }
        }
        #expect(keys == ["k"])
        #expect(try disk.object(forKey: "k") == Data("v".utf8))
    }

    // Errors thrown on the queue come out of the hop unchanged, and the store stays usable.
    @Test("an error thrown on the queue is the caller's error; the next call works")
    func errorsCrossTheHop() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        #expect(storageError { _ = try disk.object(forKey: "missing") }?.isNotFound == true)
        #expect(throws: StorageError.self) { try disk.engine.sync { _ throws(StorageError) in throw StorageError.notFound } }
        try disk.setObject(Data("v".utf8), forKey: "k")
        #expect(try disk.object(forKey: "k") == Data("v".utf8))
    }

    // Contract 6 and the format: the in-place encoder writes exactly the documented bytes
    // (Docs/Architecture.md, "The disk format"), spelled out here field by field.
    @Test("records encoded in place have exactly the documented bytes")
    func recordBytes() {
        let salt: UInt64 = 0x1234_5678_9abc_def1
        func record(_ body: [UInt8]) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: 4) + littleEndian(UInt32(body.count)) + body
            let checksum = bytes[4...].withUnsafeBytes { UInt32(truncatingIfNeeded: XXH64.hash($0, seed: salt)) }
            bytes.replaceSubrange(0..<4, with: littleEndian(checksum))
            return bytes
        }
        let key = "caf\u{E9}/k"
        let value: [UInt8] = Array(0..<200)
        var encoded: [UInt8] = []
        value.withUnsafeBytes { raw in
            _ = SegmentFormat.appendSet(key: key, expiry: 1_000, time: 500.5, value: .inline(size: 200), inlineBytes: raw,
                                        salt: salt, to: &encoded)
        }
        #expect(encoded == record([0x31] + littleEndian(500.5.bitPattern) + littleEndian(1_000.0.bitPattern)
                                  + [UInt8(key.utf8.count)] + Array(key.utf8) + value))

        let longKey = String(repeating: "k", count: 200) // a two-byte length
        encoded = []
        SegmentFormat.appendSet(key: longKey, expiry: StoredTime.never, time: 2, value: .file(id: 7, size: 300_000, hash: 9),
                                inlineBytes: nil, salt: salt, to: &encoded)
        #expect(encoded == record([0x22] + littleEndian(2.0.bitPattern) + [0xc8, 0x01] + Array(longKey.utf8)
                                  + littleEndian(UInt64(7)) + littleEndian(UInt64(300_000)) + littleEndian(UInt64(9))))

        encoded = []
        SegmentFormat.appendRemove(key: key, salt: salt, to: &encoded)
        SegmentFormat.appendAccess(segment: 3, offset: 80, time: 9.25, keyHash: 0x0102, salt: salt, to: &encoded)
        SegmentFormat.appendClear(salt: salt, to: &encoded)
        SegmentFormat.appendBatch(count: 2, length: 64, salt: salt, to: &encoded)
        #expect(encoded == record([0x03] + Array(key.utf8))
                + record([0x25] + littleEndian(UInt32(3)) + littleEndian(UInt32(80)) + littleEndian(9.25.bitPattern) + littleEndian(UInt64(0x0102)))
                + record([0x04])
                + record([0x06] + littleEndian(UInt32(2)) + littleEndian(UInt32(64))))
    }

    // Contract item 8: a read compares the stored key's bytes with the key's UTF-8 in place; bytes
    // that differ are compared as strings, so another spelling of the same key is never a mismatch.
    @Test("the in-place key comparison: equal bytes, a canonically equivalent spelling, another key, bytes that are no UTF-8")
    func inPlaceKeyComparison() {
        func same(_ stored: [UInt8], _ key: String) -> Bool {
            stored.withUnsafeBytes { SegmentLog.isSameKey($0, key) }
        }
        #expect(same(Array("caf\u{E9}".utf8), "caf\u{E9}"))
        #expect(same(Array("cafe\u{301}".utf8), "caf\u{E9}"))
        #expect(same(Array("caf\u{E9}".utf8), "cafe\u{301}"))
        #expect(same([], ""))
        #expect(!same([], "a"))
        #expect(!same(Array("cafe".utf8), "caf\u{E9}"))
        #expect(!same(Array("ab".utf8), "abc"))
        #expect(!same([0x63, 0x61, 0x66, 0xC3], "caf\u{E9}")) // torn UTF-8
        #expect(!same([0xFF], "\u{FFFD}")) // invalid UTF-8 is no key, not its repaired spelling
    }

    // The same through the engine: a key written in one spelling and read from disk (no memory
    // layer) in the other, also after a reopen, when only the record's bytes hold the written spelling.
    @Test("a disk read with the other spelling of a stored key finds it, before and after a reopen")
    func otherSpellingReadsFromDisk() throws {
        let directory = TemporaryDirectory()
        do {
            let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            try disk.setObject(Data("v".utf8), forKey: "cafe\u{301}")
            #expect(try disk.object(forKey: "caf\u{E9}") == Data("v".utf8))
        }
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        #expect(try reopened.object(forKey: "caf\u{E9}") == Data("v".utf8))
        #expect(try reopened.entry(forKey: "cafe\u{301}").object == Data("v".utf8))
        #expect(reopened.recoveryIssues.isEmpty)
    }

    // Contract 10 with the cheaper check: writes back to back, the folder removed between two of
    // them by the writing thread, and the very next write still recreates it.
    @Test("a folder removed between two back-to-back writes is recreated by the next write")
    func removedBetweenBackToBackWrites() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        let value = Data(repeating: 1, count: 200)
        for round in 0..<50 { try disk.setObject(value, forKey: "warm-\(round)") }
        try FileManager.default.removeItem(atPath: directory.storePath())
        try disk.setObject(value, forKey: "after")
        #expect(disk.allKeys == ["after"])
        #expect(FileManager.default.fileExists(atPath: directory.storePath() + "/" + StoreFolder.markerName))
    }

    // The same for the fastest removal there is: one `unlink` of the active segment, its path
    // worked out beforehand, between two writes: the next write starts a new segment.
    @Test("the active segment unlinked between two back-to-back writes: the next write goes to a new segment")
    func segmentUnlinkedBetweenBackToBackWrites() throws {
        let directory = TemporaryDirectory()
        let value = Data(repeating: 1, count: 200)
        do {
            let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            try disk.setObject(value, forKey: "first")
            let segment = directory.storePath() + "/" + SegmentFile.name(of: disk.engine.sync { $0.log.active!.id })
            for round in 0..<50 { try disk.setObject(value, forKey: "warm-\(round)") }
            #expect(unlink(segment) == 0)
            try disk.setObject(value, forKey: "after")
            let active = disk.engine.sync { $0.log.active!.path }
            #expect(active != segment)
            #expect(FileManager.default.fileExists(atPath: active))
            #expect(try disk.object(forKey: "after") == value)
        }
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        #expect(try reopened.object(forKey: "after") == value, "a write that returned went to the unlinked segment")
    }

    // The window the check gives up, with the check's clock held still: writes inside a quiet gap
    // skip the `fstat`; once the longest interval has passed, the next write checks and recreates.
    @Test("the folder-loss check's window: skipped within the quiet gap, due after the longest interval")
    func folderLossWindow() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        let clock = ManualNanoseconds()
        disk.engine.sync { $0.log.folderLoss = FolderLossCheck(clock: clock.read) }
        try disk.setObject(Data("a".utf8), forKey: "a") // checks: the first write
        try FileManager.default.removeItem(atPath: directory.storePath())
        try disk.setObject(Data("b".utf8), forKey: "b") // no time passed: no check, lands in the unlinked segment
        #expect(Set(disk.allKeys) == ["a", "b"])
        clock.advance(by: FolderLossCheck.longestInterval)
        try disk.setObject(Data("c".utf8), forKey: "c") // checks, finds the folder gone, opens it anew
        #expect(disk.allKeys == ["c"])
        #expect(FileManager.default.fileExists(atPath: directory.storePath() + "/" + StoreFolder.markerName))
    }

    // The quiet gap runs from the end of the previous write, not from the end of its append: what
    // the write does after its append (here its client, told of the change, takes a quiet gap's time)
    // is not the caller's time between two calls, in which a removal the caller orders would fall.
    @Test("the folder-loss check's quiet gap runs from the end of the previous write, not of its append")
    func quietGapFromEndOfWrite() throws {
        let directory = TemporaryDirectory()
        let clock = ManualNanoseconds()
        let store = try DiskStore(directory: directory.storePath(), sharing: .soleWriter, client: SlowListener(clock))
        defer { store.close() }
        store.log.folderLoss = FolderLossCheck(clock: clock.read)
        try DiskStoreWrites.set(store, "a", Data("a".utf8)) // checks: the first write
        try FileManager.default.removeItem(atPath: directory.storePath())
        try DiskStoreWrites.set(store, "b", Data("b".utf8)) // no time since the previous write ended: no check
        #expect(Set(store.keys) == ["a", "b"], "the quiet gap was measured from the previous write's append")
    }

    @Test("the folder-loss check's policy: first write, quiet gap, longest interval, expiry")
    func folderLossPolicy() {
        let clock = ManualNanoseconds()
        var check = FolderLossCheck(clock: clock.read)
        var due: Bool
        due = check.isDue()
        #expect(due) // the first write checks
        check.didAppend()
        due = check.isDue()
        #expect(!due) // back to back
        clock.advance(by: FolderLossCheck.quietGap)
        due = check.isDue()
        #expect(due) // after a quiet gap
        check.didAppend()
        for _ in 0..<10 {
            clock.advance(by: FolderLossCheck.quietGap / 2)
            due = check.isDue()
            #expect(!due)
            check.didAppend()
        }
        clock.advance(by: FolderLossCheck.longestInterval)
        check.didAppend()
        due = check.isDue()
        #expect(due) // a stream of back-to-back writes still checks once per interval
        check.didAppend()
        due = check.isDue()
        #expect(!due)
        check.expire()
        due = check.isDue()
        #expect(due)
    }

    private func littleEndian<I: FixedWidthInteger>(_ value: I) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }
}

/// The storages a reentrant transformer calls back into.
private final class ReentryBox: @unchecked Sendable {
    // @unchecked Sendable: the storages are set once before use; `calls` only under `lock`.
    private let lock = NSLock()
    private var storage: Storage<String>?
    private var disk: DiskStorage<String>?
    private var count = 0

    func set(_ storage: Storage<String>, _ disk: DiskStorage<String>) {
        lock.withLock { (self.storage, self.disk) = (storage, disk) }
    }

    var calls: Int { lock.withLock { count } }

    /// Calls the store through its queue, from whatever thread the transformer runs on.
    func touch() {
        let (storage, disk) = lock.withLock {
            count += 1
            return (self.storage, self.disk)
        }
        _ = storage?.allKeys
        _ = disk?.totalSize
        _ = disk?.entryInfos
    }
}

/// An engine client that takes a quiet gap's time (on the folder-loss check's clock) to hear of each change.
private final class SlowListener: QuietEngineClient, @unchecked Sendable {
    // @unchecked Sendable: the clock is behind its own lock.
    private let clock: ManualNanoseconds
    init(_ clock: ManualNanoseconds) { self.clock = clock }
    func publish(_ event: StoreEvent) { clock.advance(by: FolderLossCheck.quietGap) }
    func dropFromMemory(_ keys: [String]?) {}
    func dropFromMemory(key: String) {}
}

/// The writes of ``DiskStoreScenario``, for a suite that is not one.
private enum DiskStoreWrites: DiskStoreScenario {}
