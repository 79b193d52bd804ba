import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#endif

// What writers keep for observing followers never comes back into the store (a kept segment is renamed
// out of its segments: a writer killed while removals empty the store, a removeAll on a full disk), never
// piles up (value files replaced while a reader keeps up), and observers still hear each change once, in
// order (key observers' values after a compaction, writers among several, a reader racing clears and
// compactions, a reader released with live tokens). Found by a review of the first version of the marks.

@Suite("Segments and value files kept for followers never come back and never pile up", .serialized)
struct RetentionSafetyTests {
    typealias Writer = RetiredSegmentCaseTests.Writer

    static func valueFiles(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).filter(DiskStore.isValueFileName).sorted()
    }

    static func segments(_ path: String) throws -> [UInt32] {
        try FileManager.default.contentsOfDirectory(atPath: path).compactMap(SegmentFile.id(ofName:)).sorted()
    }

    // MARK: data safety

    /// The scenario of `resurrectionAfterKillInsideDeleteEverything`: returns the newest segment before
    /// the last removal (the one that empties the store and makes the writer start its files anew).
    static func emptyingScenario(_ folder: TemporaryDirectory, strace: [String]?,
                                 duringLastRemoval: (UInt32) throws -> Void = { _ in }) throws -> (last: UInt32, killed: Bool) {
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        let reader = try RetiredSegmentCaseTests.reader(folder)
        let changes = Recorder<StorageChange>()
        reader.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = reader.allKeys // the mark, at the first segment
        let tool = try #require(builtExecutable(named: "StashTorture"))
        let child: ChildProcess
        if let strace {
            child = try ChildProcess(try #require(Strace.executable), strace + ["--", tool.path, "step", path, "--small-thresholds"], input: .held)
        } else {
            child = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
        }
        let watchdog = Watchdog(child, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(child.readLine() == "ready", "\(child.errors)")
        // Several segments of distinct keys (no dead bytes: no compaction), then a removeAll: the reader
        // has not read them, so the writer keeps them (superseded by the clear's segment).
        for index in 0..<40 { #expect(child.ask("set k\(index) 5000").hasPrefix("wrote"), "\(child.errors)") }
        #expect(child.ask("clear") == "cleared", "\(child.errors)")
        // 70 KB of records after the clear: one more segment.
        #expect(child.ask("set m0 60000").hasPrefix("wrote"), "\(child.errors)")
        #expect(child.ask("set m1 10000").hasPrefix("wrote"), "\(child.errors)")
        // The reader catches up: what the writer kept is no longer needed (it goes at its next publish).
        _ = try reader.existsObject(forKey: "x")
        reader.waitForObservers()
        #expect(child.ask("remove m1") == "removed m1", "\(child.errors)")
        let last = try #require(segments(path).last)
        // The store is emptied by this removal, > 64 KiB of records: deleteEverything(freeingSpace: false).
        child.send("remove m0\n")
        try duringLastRemoval(last)
        let answer = child.readLine()
        let killed = answer != "removed m0"
        child.closeInput()
        _ = child.wait(upTo: TestDeadline.long)
        withExtendedLifetime(reader) {}
        return (last, killed)
    }

    /// A writer empties the store by removals (its files start anew: deleteEverything(freeingSpace: false))
    /// while segments an earlier removeAll superseded are still kept (no longer needed, not yet removed).
    /// Killed between deleting its current segments and starting the next one, it leaves the kept segments
    /// with nothing superseding them: the next open must not bring back the keys the removeAll cleared.
    @Test("a writer killed while removals empty the store does not bring back what an earlier removeAll cleared",
          .enabled(if: Strace.isAvailable))
    func resurrectionAfterKillInsideDeleteEverything() throws {
        // Dry run: learn the segment numbers.
        let dry = TemporaryDirectory()
        let (last, killed) = try Self.emptyingScenario(dry, strace: nil)
        #expect(!killed)
        do {
            let check = try DiskStorage(config: dry.diskConfig(), transformer: TransformerFactory.forData())
            #expect(check.allKeys.isEmpty, "dry run: \(check.allKeys.sorted())")
        }
        // The kill: when the writer creates the segment after the last, inside deleteEverything.
        let target = SegmentFile.name(of: last + 1)
        let folder = TemporaryDirectory()
        let run = try Self.emptyingScenario(folder, strace: ["-f", "-qq", "-o", "/dev/null", "-P", target, "-e", "trace=openat",
                                                             "-e", "inject=openat:signal=KILL:when=1"])
        #expect(run.last == last, "numbers differ from the dry run")
        #expect(run.killed, "the writer was not killed")
        let files = try Self.segments(folder.storePath())
        let check = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        let keys = check.allKeys.sorted()
        #expect(keys.isEmpty, "segments on disk after the kill: \(files); keys back after the reopen: \(keys.count) \(keys.prefix(5))")
    }

    /// A stand-in for an observing follower's mark (``SharedState/markFollowed(_:)``): a shared OFD lock on
    /// `stash-shared` at 2^32 + `segment`, held through its own open file description. Returns the descriptor.
    static func holdMark(_ storePath: String, at segment: UInt32) throws -> Int32 {
        let fd = open(storePath + "/stash-shared", O_RDONLY)
        try #require(fd >= 0)
        var request = flock()
        request.l_type = Int16(F_RDLCK)
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t((1 << 32) + Int64(segment))
        request.l_len = 1
        try #require(fcntl(fd, 37 /* F_OFD_SETLK */, &request) == 0)
        return fd
    }

    /// A removeAll on a full disk (the writer deletes its files first, then cannot start a new segment)
    /// while segments an earlier removeAll superseded are kept for a follower that has not read them:
    /// nothing supersedes them any longer, and the next open replays them. No kill needed.
    @Test("a removeAll on a full disk does not bring back, at the next open, keys an earlier removeAll cleared",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"))
    func fullDiskRemoveAllResurrectsKeptSegments() throws {
        try FullDiskTests.withMountedTmpfs(size: "4m") { mountPoint in
            let storePath = mountPoint + "/store"
            var thresholds = DiskStore.Thresholds.standard
            thresholds.compactionMinimum = 1 << 30
            thresholds.segmentLimit = 64 << 10
            thresholds.appendsThroughMapping = false // no reserved room that a cut would free
            DiskStore.thresholdOverrides.withLock { $0[mountPoint] = thresholds }
            defer { DiskStore.thresholdOverrides.withLock { $0[mountPoint] = nil } }
            do {
                let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
                var writer: DiskStorage<Data>? = try DiskStorage(config: config, transformer: TransformerFactory.forData())
                // An observing follower that read segment 1 only (idle since).
                let mark = try Self.holdMark(storePath, at: 1)
                defer { close(mark) }
                for index in 0..<40 { try writer?.setObject(Data(repeating: UInt8(index), count: 5_000), forKey: "k\(index)") }
                try writer?.removeAll() // kept for the follower: the segments after 1
                writer?.engine.sync { $0.housekeeping.wait() } // the background retirement done
                let kept = try Self.segments(storePath)
                try writer?.setObject(Data(repeating: 7, count: 5_000), forKey: "m0")
                // Some process reads the clear's segment (any reader opened since holds it open):
                // deleting it frees nothing.
                let newest = try #require(Self.segments(storePath).last)
                let held = open(storePath + "/" + SegmentFile.name(of: newest), O_RDONLY)
                defer { close(held) }
                try FullDiskTests.fill(mountPoint, leaving: 0)
                do { try writer?.removeAll() } catch { Issue.record("removeAll on a full disk threw \(error)") }
                let afterRemoveAll = try Self.segments(storePath)
                writer = nil // closed
                try? FileManager.default.removeItem(atPath: mountPoint + "/filler")
                let reopened = try DiskStorage(config: config, transformer: TransformerFactory.forData())
                let keys = reopened.allKeys.sorted()
                #expect(keys.isEmpty, "segments after the first removeAll: \(kept); after the second: \(afterRemoveAll); keys back after reopening: \(keys.count) \(keys.prefix(4))")
            }
        }
    }

    // MARK: leaks

    /// A reader that observes and calls after every write of the writer: every write replaces a value in
    /// a file of its own. The reader has read each replaced value; nothing should pile up.
    @Test("value files replaced by overwrites do not pile up while an observing reader keeps up")
    func replacedValueFilesDoNotPileUp() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        let reader = try RetiredSegmentCaseTests.reader(folder)
        let changes = Recorder<StorageChange>()
        reader.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = reader.allKeys
        let writer = try Writer(path) // default thresholds: 64 MiB segments
        for _ in 0..<25 {
            writer.set("big", 300_000)
            _ = try reader.existsObject(forKey: "x") // caught up
        }
        reader.waitForObservers()
        #expect(changes.received.count == 25)
        let whileOpen = try Self.valueFiles(path).count
        writer.close()
        _ = try reader.existsObject(forKey: "x")
        let afterClose = try Self.valueFiles(path).count
        let next = try Writer(path)
        next.set("small", 10)
        next.close()
        _ = try reader.existsObject(forKey: "x")
        let afterNextWriter = try Self.valueFiles(path).count
        #expect(whileOpen <= 2 && afterClose <= 1 && afterNextWriter <= 1,
                "value files on disk (one is live): while the writer is open \(whileOpen), after its close \(afterClose), after the next writer \(afterNextWriter)")
    }

    // MARK: key observers

    /// Key observer of a packed value, overwritten after a compaction the reader did not see (it opens
    /// the store anew and takes the value before from the index and segments it had).
    @Test("a key observer of a reader gets the packed value replaced after a compaction it opened anew for")
    func keyObserverBeforeAfterReopen() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        let reader = try RetiredSegmentCaseTests.reader(folder)
        let edits = Recorder<String>()
        reader.addObserver(edits, forKey: "k") { recorder, _, change in
            switch change {
            case .edit(let before, let after):
                let old = before.flatMap { WrittenValue(parsing: $0, key: "k")?.sequence }.map(String.init) ?? "nil"
                let new = WrittenValue(parsing: after, key: "k").map { String($0.sequence) } ?? "?"
                recorder.append("\(old)->\(new)")
            case .remove: recorder.append("remove")
            }
        }
        _ = reader.allKeys
        let writer = try Writer(path, small: true)
        writer.set("k", 100) // 1
        _ = try reader.existsObject(forKey: "x")
        for index in 0..<90 { writer.set("f\(index % 3)", 5_000) } // 2...91: compactions
        writer.set("k", 200) // 92
        writer.set("k", 300) // 93
        writer.clear()
        writer.set("k", 10) // 94
        _ = try reader.existsObject(forKey: "x")
        reader.waitForObservers()
        #expect(edits.received == ["nil->1", "1->92", "92->93", "remove", "nil->94"])
        writer.close()
    }

    /// This process is a writer among several with an observer, and writes too, between another writer
    /// process's sets, removeAll and compaction steps; it calls after each of the other's.
    @Test("a writer among several with an observer hears its own and another writer's changes once each, in order")
    func sharedWriterObserverInterleaved() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        let storage = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 10),
                                  transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = storage.allKeys
        let other = try Writer(path, shared: true, small: true)
        var expected: [StorageChange] = []
        var random = SeededGenerator(seed: 11)
        for step in 0..<240 {
            switch random.below(10) {
            case 0:
                other.clear(); expected.append(.removeAll)
            case 1, 2, 3:
                try storage.setObject(Data(repeating: UInt8(step & 0xff), count: 1_000 + random.below(6_000)), forKey: "a\(step % 4)")
                expected.append(.add(key: "a\(step % 4)"))
            case 4:
                other.set("big", 300_000); expected.append(.add(key: "big"))
            default:
                other.set("k\(step % 3)", 5_000); expected.append(.add(key: "k\(step % 3)"))
            }
            if random.below(3) == 0 { _ = try storage.existsObject(forKey: "x") }
        }
        _ = try storage.existsObject(forKey: "x")
        storage.waitForObservers()
        let heard = changes.received
        #expect(heard == expected, "\(RetiredSegmentCaseTests.difference(heard, expected))")
        other.close()
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// A writer process runs sets (some in value files), removals and removeAll at full speed, compacting,
    /// while this reader calls without pause: opens anew race removeAll and compactions.
    @Test("a reader calling without pause beside a writer process that clears and compacts hears each change once, in order")
    func racingOpensWithClears() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        let storage = try RetiredSegmentCaseTests.reader(folder)
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        let tool = try #require(builtExecutable(named: "StashTorture"))
        let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        _ = storage.allKeys
        var random = SeededGenerator(seed: 3)
        var (commands, expected, present) = ([String](), [StorageChange](), Set<String>())
        for _ in 0..<500 {
            let key = "k\(random.below(12))"
            switch random.below(40) {
            case 0:
                commands.append("clear"); expected.append(.removeAll); present = []
            case 1...5:
                commands.append("remove \(key)")
                if present.remove(key) != nil { expected.append(.remove(key: key)) }
            case 6, 7:
                commands.append("set \(key) 270000"); present.insert(key); expected.append(.add(key: key))
            default:
                commands.append("set \(key) \(2_000 + random.below(4_000))"); present.insert(key); expected.append(.add(key: key))
            }
        }
        try RetiredSegmentCaseTests.callWhileWorking(storage, writer, commands, keys: 12)
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        let heard = changes.received
        #expect(heard == expected, "\(RetiredSegmentCaseTests.difference(heard, expected))")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// The reader released while its observation token and its changes() stream are still held: it
    /// follows nothing any more, and must hold nothing back.
    @Test("a released reader whose observation token and stream outlive it holds nothing back")
    func releasedReaderWithLiveToken() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try RetiredSegmentCaseTests.makeStore(folder)
        var storage: Storage<Data>? = try RetiredSegmentCaseTests.reader(folder)
        let changes = Recorder<StorageChange>()
        let token = storage?.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        let stream = storage?.changes()
        _ = storage?.allKeys
        storage = nil
        let writer = try Writer(path, small: true)
        for step in 0..<40 { writer.set("k\(step % 10)", 5_000) }
        writer.set("v", 300_000)
        writer.clear()
        writer.set("z", 10)
        writer.close()
        let reopened = try Writer(path, small: true)
        reopened.close()
        let ids = try Self.segments(path)
        #expect(ids.count <= 2, "segments left for a released reader: \(ids)")
        #expect(try Self.valueFiles(path).isEmpty)
        withExtendedLifetime((token, stream)) {}
    }

    /// As `resurrectionAfterKillInsideDeleteEverything`, without a kill: the writer is slowed where it
    /// starts its next segment (strace delays that `openat`), and a reader opens meanwhile.
    @Test("a reader that opens while removals empty the store never sees keys an earlier removeAll cleared",
          .enabled(if: Strace.isAvailable))
    func readerOpeningInsideDeleteEverything() throws {
        let dry = TemporaryDirectory()
        let (last, _) = try Self.emptyingScenario(dry, strace: nil)
        let target = SegmentFile.name(of: last + 1)
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        var seen: [String] = []
        var filesSeen: [UInt32] = []
        _ = try Self.emptyingScenario(folder, strace: ["-f", "-qq", "-o", "/dev/null", "-P", target, "-e", "trace=openat",
                                                       "-e", "inject=openat:delay_enter=3000000"]) { last in
            // Once the writer has deleted its current segments (it is then held in the delayed openat).
            let deadline = Date().addingTimeInterval(10)
            while try Self.segments(path).contains(last), Date() < deadline { usleep(1_000) }
            filesSeen = try Self.segments(path)
            let fresh = try RetiredSegmentCaseTests.reader(folder)
            seen = fresh.allKeys.sorted()
        }
        #expect(seen.isEmpty, "a reader opened with segments \(filesSeen) on disk saw \(seen.count) keys: \(seen.prefix(4))")
    }
}
