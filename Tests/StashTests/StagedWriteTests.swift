import Dispatch
import Foundation
import Testing
@testable import Stash

/// A write makes its value file on the calling thread and only commits it on the queue, and the
/// file of the value it replaced is deleted after the queue (DESIGN "Performance"): the orphan sweep
/// must never delete a file whose record is still to come, and nothing may be left behind.
@Suite("Staged writes (value files written off the queue)")
struct StagedWriteConcurrencyTests {
    private func makeDisk(_ directory: TemporaryDirectory) throws -> DiskStorage<Data> {
        try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
    }

    private func valueFiles(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.storePath()).filter(DiskStore.isValueFileName).sorted()
    }

    // Contract 6: a sweep (here removeAll's) between a file's staging and its record keeps the file.
    @Test("a sweep while a write is staged leaves its file, and the write then reads back")
    func sweepSparesStagedFile() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        try disk.setObject(Data("old".utf8), forKey: "other")
        let data = Data("staged".utf8)
        let staged = try #require(disk.engine.stage("k", data, maxSize: 0, durable: false))
        try disk.removeAll() // sweeps every value file no record names
        #expect(FileManager.default.fileExists(atPath: staged.path), "the sweep deleted a staged file")
        _ = try disk.engine.sync { store in
            try store.write("k", data, staged: staged, expiry: .distantFuture, now: Date(), maxSize: 0, durable: false)
        }
        #expect(try disk.object(forKey: "k") == data)
        #expect(disk.allKeys == ["k"])
        #expect(try valueFiles(directory) == [(staged.path as NSString).lastPathComponent])
    }

    // Contract 6: a crash's orphan whose generation the journal never named is not kept forever,
    // and later writes do not reuse its generation.
    @Test("an orphan of a generation ahead of the journal is removed by a later sweep")
    func orphanAheadOfJournalIsSwept() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("a".utf8), forKey: "a")
        let ghost = directory.storePath() + "/" + DiskStore.fileName(forKey: "ghost", generation: 0x50)
        try Data("left by a crash".utf8).write(to: URL(fileURLWithPath: ghost))
        let disk = try makeDisk(directory)
        try disk.removeAll() // the ghost could be a write staged after this sweep began: spared once
        try disk.setObject(Data("b".utf8), forKey: "b")
        let generation = try #require(DiskStore.generation(ofValueFileName: (disk.entryInfos[0].filePath as NSString).lastPathComponent))
        #expect(generation > 0x50, "a new write reused a generation at or below the orphan's")
        try disk.removeObject(forKey: "b")
        try disk.removeAll()
        #expect(!FileManager.default.fileExists(atPath: ghost), "the orphan was never swept")
        #expect(try valueFiles(directory).isEmpty)
    }

    // Contracts 4 and 6: writers on several threads, overwriting, leave exactly the last value of
    // every key and one file per key (each replaced file deleted before its write returned).
    @Test("concurrent overwriting writers leave the last value of each key and no other file")
    func concurrentWritersLeaveNothingBehind() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 8),
                                        transformer: TransformerFactory.forData())
        let threads = 4
        let rounds = 150
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for round in 0..<rounds {
                // Each key has one writer, so its last value is known; keys are shared by rounds.
                let key = "t\(thread)-k\(round % 10)"
                do {
                    try storage.setObject(Data("\(thread) \(round)".utf8), forKey: key)
                    if round % 50 == 49 { try storage.removeExpiredObjects() }
                } catch {
                    failures.withLock { $0.append("\(key): \(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 } == [])
        let reopened = try makeDisk(directory)
        for thread in 0..<threads {
            for slot in 0..<10 {
                let last = (0..<rounds).last { $0 % 10 == slot }!
                #expect(try reopened.object(forKey: "t\(thread)-k\(slot)") == Data("\(thread) \(last)".utf8))
            }
        }
        #expect(try valueFiles(directory).count == threads * 10)
    }
}
