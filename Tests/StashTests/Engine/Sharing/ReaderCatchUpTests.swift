import Foundation
import Testing
import Stash
@testable import StashTorture // TortureValue: the values `StashTorture step` writes

// Contract item 11, readers in other processes, when catching up is not a plain replay: a writer
// process's appended records with a damaged one among them, a catch-up inside a read (a transformer
// that reads the store), a value file damaged for good while no shared file tells what changed.

@Suite("Readers in other processes: catching up past damage and inside a read", .serialized)
struct ReaderCatchUpTests {
    @Test("a reader's catch-up that meets a damaged record among a writer process's appended ones still tells its observers of the whole records after it")
    func observersHearPastDamagedRecord() throws {
        let folder = TemporaryDirectory()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        let writer = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        let (storage, heard) = try observingReader(of: folder)
        #expect(writer.ask("set a 10") == "wrote a 1")
        #expect(WrittenValue(parsing: try storage.object(forKey: "a"), key: "a")?.sequence == 1) // caught up to here
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.storePath()).filter { $0.hasSuffix(".segment") }.sorted()
        let segment = URL(fileURLWithPath: folder.storePath() + "/" + (try #require(segments.last)))
        let start = try Damage.recordsEnd(segment.path) // the writer reserves room past its records
        #expect(writer.ask("set x 10") == "wrote x 2")
        // x's record is damaged before this process catches up; k's, after it, is whole.
        let end = try Damage.recordsEnd(segment.path)
        try #require(end > start)
        try flipByte(at: start + (end - start) / 2, of: segment.path)
        #expect(writer.ask("set k 10") == "wrote k 3")
        #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == 3)
        storage.waitForObservers()
        #expect(heard.received == ["k #3"], "the observer missed the other process's write")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    @Test("a reader whose writer process is idle after its shared file was deleted: a read of a value whose file is damaged fails once, as damage, and the reader reads on")
    func damagedValueWhileSharedFileIsGone() throws {
        let folder = TemporaryDirectory()
        do {
            let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
            try storage.setObject(Data(repeating: 7, count: 300_000), forKey: "big") // a value file of its own
            try storage.setObject(Data("small".utf8), forKey: "small")
        }
        let writer = try ChildProcess(try executable("StashTorture"), ["hold", folder.storePath()], input: .held)
        let writerWatchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { writerWatchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        let reader = try ChildProcess(try executable("StashTorture"), ["follow", folder.storePath()], input: .held)
        let readerWatchdog = Watchdog(reader, seconds: TestDeadline.long)
        defer { readerWatchdog.cancel() }
        #expect(reader.readLine() == "ready", "\(reader.errors)")
        // The shared file goes (the writer makes a new one at its next write; it writes nothing), and
        // big's value file is damaged: nothing the reader can catch up to changes its answer.
        try FileManager.default.removeItem(atPath: folder.storePath() + "/stash-shared")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.storePath())
        let valueFile = try #require(names.first { $0.hasSuffix(".value") }.map { folder.storePath() + "/" + $0 })
        try flipByte(at: 1_000, of: valueFile)
        #expect(reader.ask("get big") == "failed big", "\(reader.errors)")
        #expect(reader.ask("get small") == "got small 5", "\(reader.errors)")
        reader.closeInput()
        #expect(reader.wait(upTo: TestDeadline.long) && reader.status == 0, "the reader did not end well: \(reader.errors)")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    @Test("a transformer that reads the store from inside a reader's read, after a writer process replaced both values: the value the outer read decoded is not kept in memory as current, and the next read sees the writer's")
    func nestedReadCatchesUpInsideRead() throws {
        let folder = TemporaryDirectory()
        do {
            let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
            try storage.setObject(TortureValue.make(key: "a", sequence: 100, payloadCount: 10), forKey: "a")
            try storage.setObject(TortureValue.make(key: "b", sequence: 100, payloadCount: 300_000), forKey: "b") // a value file of its own
        }
        let writer = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        let reader = Locked<Storage<Data>?>(nil)
        let nested = Recorder<String>()
        // Decoding a's first value: the writer process overwrites a and b (b's old file goes), then the
        // transformer reads b, whose file the reader's index still names.
        let transformer = Transformer<Data>(toData: { $0 }, fromData: { data in
            if WrittenValue(parsing: data, key: "a")?.sequence == 100, nested.received.isEmpty, let storage = reader.withLock({ $0 }) {
                nested.append(writer.ask("set a 10"))
                nested.append(writer.ask("set b 300000"))
                let b = try? storage.object(forKey: "b")
                nested.append(b.flatMap { WrittenValue(parsing: $0, key: "b") }.map { "read b \($0.sequence)" } ?? "no b")
            }
            return data
        })
        var config = folder.diskConfig()
        config.readOnly = true
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: transformer)
        reader.withLock { $0 = storage }
        defer { reader.withLock { $0 = nil } }
        // This read began before the writer's writes: a's old value is its answer.
        #expect(WrittenValue(parsing: try storage.object(forKey: "a"), key: "a")?.sequence == 100)
        #expect(nested.received == ["wrote a 1", "wrote b 2", "read b 2"])
        // This one began after both returned.
        #expect(WrittenValue(parsing: try storage.object(forKey: "a"), key: "a")?.sequence == 1, "a stale memory copy of a")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    @Test("a reader whose shared file was deleted under a writer process, which then writes: the reader's observers hear those writes, though no shared file says what changed")
    func observersHearWritesWithoutSharedFile() throws {
        let folder = TemporaryDirectory()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        let writer = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        let (storage, heard) = try observingReader(of: folder)
        #expect(writer.ask("set k 10") == "wrote k 1")
        #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == 1)
        try FileManager.default.removeItem(atPath: folder.storePath() + "/stash-shared")
        _ = try storage.existsObject(forKey: "unrelated") // finds it gone
        #expect(writer.ask("set k 10") == "wrote k 2")
        #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == 2)
        #expect(writer.ask("set k 10") == "wrote k 3")
        #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == 3)
        storage.waitForObservers()
        #expect(heard.received == ["k #1", "k #2", "k #3"], "the observer missed writes made while the shared file was gone")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    /// Flips one byte of the file at `path`, in place (the file keeps its inode and length).
    /// A read-only `Storage` of `folder`'s store, and what an observer of key "k" hears ("k #sequence", "k removed").
    private func observingReader(of folder: TemporaryDirectory) throws -> (storage: Storage<Data>, heard: Recorder<String>) {
        var config = folder.diskConfig()
        config.readOnly = true
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let heard = Recorder<String>()
        storage.addObserver(heard, forKey: "k") { recorder, _, change in
            switch change {
            case .edit(_, let after): recorder.append("k #\(WrittenValue(parsing: after, key: "k").map { String($0.sequence) } ?? "?")")
            case .remove: recorder.append("k removed")
            }
        }
        return (storage, heard)
    }

    private func flipByte(at offset: Int, of path: String) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let byte = try #require(try handle.read(upToCount: 1)?.first)
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: [byte ^ 0xFF])
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}
