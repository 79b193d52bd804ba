import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 5, disk part: `maxSize` holds after every write, expired first, then LRU.
@Suite("Disk limits")
struct DiskLimitsTests {
    private func makeDisk(_ directory: TemporaryDirectory, maxSize: Int, clock: TestClock, valuesAsFiles: Bool = false) throws -> DiskStorage<Data> {
        var config = directory.diskConfig(maxSize: maxSize)
        config.storesValuesAsFiles = valuesAsFiles
        return try DiskStorage(config: config, transformer: TransformerFactory.forData(), now: clock.function)
    }

    private func valueBytesOnDisk(_ directory: TemporaryDirectory) throws -> Int {
        let path = directory.storePath()
        return try FileManager.default.contentsOfDirectory(atPath: path)
            .filter { DiskStore.isValueFileName($0) }
            .reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: path + "/" + $1)[.size] as? Int) ?? 0) }
    }

    // Contract 5: after setObject returns, the live value bytes are ≤ maxSize. With a file per value
    // they are the folder's value files (each removed on eviction); packed, the live records' values
    // (dead records stay in the segments until compaction: a design decision).
    @Test("the store's value bytes stay within maxSize after every write", arguments: [true, false])
    func maxSizeHoldsAfterEveryWrite(valuesAsFiles: Bool) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let disk = try makeDisk(directory, maxSize: 1000, clock: clock, valuesAsFiles: valuesAsFiles)
        var random = SeededGenerator(seed: 42)
        for step in 0..<300 {
            let size = Int(random.next() % 300) + 1
            try disk.setObject(Data(repeating: UInt8(step % 251), count: size), forKey: "k\(random.next() % 40)")
            clock.advance(by: 1)
            #expect(disk.totalSize <= 1000)
            #expect(disk.entryInfos.reduce(0) { $0 + $1.size } == disk.totalSize)
            #expect(try valueBytesOnDisk(directory) == (valuesAsFiles ? disk.totalSize : 0))
        }
    }

    // Contract 5: least recently used goes first, and reads count as use.
    @Test("eviction removes the least recently used value, counting reads as use")
    func evictsLeastRecentlyUsed() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let disk = try makeDisk(directory, maxSize: 300, clock: clock)
        for key in ["a", "b", "c"] { try disk.setObject(Data(count: 100), forKey: key) }
        _ = try disk.object(forKey: "a") // now b is the least recently used
        try disk.setObject(Data(count: 100), forKey: "d")
        #expect(Set(disk.allKeys) == ["a", "c", "d"])
    }

    // Contract 5: expired values are evicted before any valid one.
    @Test("expired values are evicted before least recently used valid ones")
    func evictsExpiredFirst() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let disk = try makeDisk(directory, maxSize: 300, clock: clock)
        try disk.setObject(Data(count: 100), forKey: "old")
        try disk.setObject(Data(count: 100), forKey: "expiring", expiry: .seconds(10))
        try disk.setObject(Data(count: 100), forKey: "new")
        _ = try disk.object(forKey: "expiring") // most recently used, but expired below
        clock.advance(by: 20)
        try disk.setObject(Data(count: 100), forKey: "newest")
        #expect(Set(disk.allKeys) == ["old", "new", "newest"])
    }

    // Contract 5: the LRU order (including reads) survives a restart.
    @Test("the eviction order survives a reopen")
    func lruOrderSurvivesRestart() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        do {
            let disk = try makeDisk(directory, maxSize: 0, clock: clock)
            for key in ["a", "b", "c"] { try disk.setObject(Data(count: 100), forKey: key) }
            _ = try disk.object(forKey: "a")
            _ = try disk.object(forKey: "b")
        } // closed: the engine flushes its buffered access records
        let reopened = try makeDisk(directory, maxSize: 300, clock: clock)
        #expect(reopened.entryInfos.map(\.key) == ["c", "a", "b"])
        try reopened.setObject(Data(count: 100), forKey: "d")
        #expect(Set(reopened.allKeys) == ["a", "b", "d"])
    }

    // Contract 5: memory hits count as use on disk too, so a hot value is not evicted from disk.
    @Test("values read from memory are not evicted from disk as unused")
    func memoryHitsCountAsDiskUse() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(maxSize: 300), transformer: TransformerFactory.forData(), now: clock.function)
        for key in ["hot", "b", "c"] { try storage.setObject(Data(count: 100), forKey: key) }
        _ = try storage.object(forKey: "hot") // a memory hit
        try storage.setObject(Data(count: 100), forKey: "d")
        #expect(Set(storage.allKeys) == ["hot", "c", "d"])
        #expect(try storage.object(forKey: "hot").count == 100)
    }

    // Contract 5: memory hits are journaled as use too, so their order also survives a restart.
    @Test("values read from memory keep their recency across a reopen")
    func memoryHitOrderSurvivesRestart() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        do {
            let storage = try Storage<Data>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData(), now: clock.function)
            for key in ["a", "b", "c"] { try storage.setObject(Data(count: 100), forKey: key) }
            clock.advance(by: 5)
            _ = try storage.object(forKey: "a") // memory hits only: the disk is never read
            _ = try storage.object(forKey: "b")
        }
        let reopened = try makeDisk(directory, maxSize: 300, clock: clock)
        #expect(reopened.entryInfos.map(\.key) == ["c", "a", "b"])
        #expect(reopened.entryInfos.last?.lastAccess == clock.now)
    }

    // Contract 5: a single value larger than the limit is rejected, and nothing else is lost.
    @Test("a value larger than maxSize is rejected with valueTooLarge and evicts nothing")
    func oversizedValueIsRejected() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, maxSize: 100, clock: TestClock(), valuesAsFiles: true)
        try disk.setObject(Data(count: 50), forKey: "small")
        let error = storageError { try disk.setObject(Data(count: 101), forKey: "big") }
        guard case .valueTooLarge(101, 100)? = error else {
            Issue.record("expected valueTooLarge, got \(String(describing: error))")
            return
        }
        #expect(disk.allKeys == ["small"])
        #expect(disk.totalSize == 50)
        #expect(try valueBytesOnDisk(directory) == 50) // the rejected value left no file
    }

    @Test("trim(toSize:) removes least recently used values down to the size")
    func trimToSize() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, maxSize: 0, clock: TestClock())
        for key in ["a", "b", "c", "d"] { try disk.setObject(Data(count: 100), forKey: key) }
        try disk.trim(toSize: 250)
        #expect(Set(disk.allKeys) == ["c", "d"])
        #expect(disk.totalSize == 200)
    }
}
