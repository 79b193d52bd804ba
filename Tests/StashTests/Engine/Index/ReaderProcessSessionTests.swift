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

/// Held-out attacks on the disk engine v4: reader processes beside a sole writer whose background
/// compactions write the key directory, whose sessions keep one as they go and whose closes write key
/// uses files; observers of a read-only storage beside writer processes.
@Suite("Reader processes beside writers that write key directories: answers and observers", .serialized)
struct ReaderProcessSessionTests: HeldOutSessionScenario {
    /// Two reader processes (a third opens midway) read, pipelined, while a sole writer in this process
    /// writes (its background compactions write the key directory, its sessions keep one as they go),
    /// removes, reads (its closes write key uses files over files made ready), and closes and opens
    /// again. Each read is sent once the writes before it returned: it must see them, and answer a value
    /// of its key.
    @Test("reader processes beside a sole writer whose compactions write the key directory and whose closes write uses files: every answer is a value of its key, no older than the last write that returned before the read",
          arguments: [51, 52, 53] as [UInt64])
    func readerProcessesBesideCompactingWriter(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<300).map { "r\($0)" }
        var history = History()
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let writer = try openDataStore(path)
                for key in keys { try writer.setObject(Self.value(key, length: history.set(key)), forKey: key) }
            }
            var readers = [try Reader(tool, path, name: "reader 1"), try Reader(tool, path, name: "reader 2")]
            for reader in readers { #expect(reader.child.waitForOutput(containing: "ready", upTo: TestDeadline.long), "\(reader.child.errors)") }
            func askAll(_ key: String) { for reader in readers { reader.get(key, after: history.event) } }
            var (compactions, keptDirectories, usesFilesMadeReady) = (0, 0, 0)
            var (compactedNow, cleared) = (false, false)
            for session in 0..<7 {
                // Readers that open after a session that only read (a key uses file beside the directory).
                if session == 2 || session == 5 { readers.append(try Reader(tool, path, name: "reader \(readers.count + 1) (opened at session \(session))")) }
                let writer = try openDataStore(path)
                let readingSession = session % 3 == 1
                for step in 0..<220 {
                    if readingSession {
                        // Reads alone: the close writes a key uses file (over one made ready).
                        for _ in 0..<6 {
                            let key = keys[random.below(keys.count)]
                            let got = try Self.read(writer, key)
                            #expect(got?.count == history.length(key, at: history.event), "session \(session) step \(step): the writer read \(key)")
                        }
                        askAll(keys[random.below(keys.count)])
                        continue
                    }
                    let choice = random.below(100)
                    // Most writes go to a hundred keys: dead bytes, and background compactions, come soon.
                    let key = random.below(3) == 0 ? keys[random.below(keys.count)] : keys[random.below(60)]
                    switch choice {
                    case 0..<75:
                        let length = history.set(key, big: random.below(25) == 0)
                        try writer.setObject(Self.value(key, length: length), forKey: key)
                    case 75..<90:
                        try writer.removeObject(forKey: key)
                        history.remove(key)
                    case 90..<97:
                        _ = try Self.read(writer, key)
                    default:
                        // Once, a compaction on the queue (the others run in the background, when due).
                        if session == 2, step > 150, !compactedNow {
                            try writer.compactNow()
                            compactedNow = true
                        } else if session == 5, step > 150, !cleared {
                            try writer.removeAll()
                            history.removeAll()
                            cleared = true
                        }
                    }
                    if writer.isCompacting { compactions += 1 }
                    if writer.engine.sync({ $0.directoryBuilder != nil }) { keptDirectories += 1 }
                    askAll(key)
                    askAll(keys[random.below(keys.count)])
                }
                if session == 4 { writer.waitForCompaction() }
                if readingSession { usesFilesMadeReady += writer.engine.sync { $0.usesFilesMadeReady } }
            }
            // The writer closed: every key once more.
            for key in keys { askAll(key) }
            #expect(compactions > 0, "no background compaction was seen")
            #expect(keptDirectories > 0, "no directory was kept as a session went")
            #expect(usesFilesMadeReady > 0, "no uses file was made ready")
            for reader in readers { _ = reader.finish(history, "seed \(seed)") }
        }
    }

    /// A read-only `Storage` in this process, with an observer, beside writer processes (one per session,
    /// `StashTorture step --small-thresholds`) whose overwrites make them compact in the background and
    /// write the key directory, whose sessions keep one as they go and seal it at close: at every call of
    /// this process, the observer has heard every change the writers made, in order (Contract items 11
    /// and 12), and a read returns the last value written.
    @Test("observers of a read-only storage hear every change of writer processes whose compactions write the key directory and whose closes seal a kept one, in order, at this process's next call",
          arguments: [81, 82] as [UInt64])
    func observersBesideDirectoryWritingWriters(seed: UInt64) throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig()
        config.readOnly = true
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        let before = changes.received.count
        var random = SeededGenerator(seed: seed)
        let keys = (0..<40).map { "k\($0)" }
        var expected: [StorageChange] = []
        var present: [String: UInt64] = [:] // key → the sequence of its value (numbered per writer process)
        var agreed = true
        /// A call of this process: the observer must have heard every change by its end.
        func check(_ comment: String) throws {
            _ = try storage.existsObject(forKey: "unrelated")
            storage.waitForObservers()
            let heard = Array(changes.received.dropFirst(before))
            guard heard != expected else { return }
            agreed = false
            let first = Array(zip(heard, expected)).firstIndex { $0.0 != $0.1 } ?? min(heard.count, expected.count)
            Issue.record("\(comment): the observer heard \(heard.count) changes, \(expected.count) were made; first difference at \(first): heard \(heard.dropFirst(first).prefix(4)), made \(expected.dropFirst(first).prefix(4))")
        }
        for session in 0..<4 {
            let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
            let watchdog = Watchdog(writer, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(writer.readLine() == "ready", "\(writer.errors)")
            var sequence: UInt64 = 0
            for step in 0..<150 where agreed {
                let comment = "seed \(seed) session \(session) step \(step)"
                let key = keys[random.below(keys.count)]
                switch random.below(100) {
                case 0..<80:
                    sequence += 1
                    let size = 1_000 + random.below(4_000)
                    let answer = writer.ask("set \(key) \(size)")
                    #expect(answer == "wrote \(key) \(sequence)", "\(comment): \(writer.errors)")
                    expected.append(.add(key: key))
                    present[key] = sequence
                case 80..<98:
                    #expect(writer.ask("remove \(key)") == "removed \(key)", "\(comment): \(writer.errors)")
                    if present.removeValue(forKey: key) != nil { expected.append(.remove(key: key)) }
                default:
                    guard session == 2 else { break }
                    #expect(writer.ask("clear") == "cleared", "\(comment): \(writer.errors)")
                    expected.append(.removeAll)
                    present = [:]
                }
                if random.below(3) == 0 {
                    try check(comment)
                    let read = keys[random.below(keys.count)]
                    let got = try? storage.object(forKey: read)
                    #expect(got.flatMap { WrittenValue(parsing: $0, key: read)?.sequence } == present[read], "\(comment): read of \(read)")
                }
            }
            writer.closeInput()
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
            // The close sealed its directory: no change to hear, every value as written.
            try check("seed \(seed) after session \(session)'s close")
            for key in keys {
                let got = try? storage.object(forKey: key)
                #expect(got.flatMap { WrittenValue(parsing: $0, key: key)?.sequence } == present[key], "after session \(session): read of \(key)")
            }
            guard agreed else { break }
        }
    }
}
