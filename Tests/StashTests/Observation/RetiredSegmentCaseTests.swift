import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Contract items 11 and 12: the segments and value files a writer retires while an observing follower
// has not read them (removeAll, compaction, removals that empty the store, overwrites and removals of
// values in files), across writer closes, opens and kills and writers among several; and what is kept
// goes once nothing observes. Not covered, and not promised: a shared file deleted or replaced meanwhile
// (the marks are locks on it).

@Suite("Observers of retired segments and value files: writers that close, reopen, are killed or share the store", .serialized)
struct RetiredSegmentCaseTests {
    /// A writer child process (`StashTorture step`).
    final class Writer {
        let child: ChildProcess
        let watchdog: Watchdog
        var sequence: UInt64 = 0
        init(_ path: String, shared: Bool = false, small: Bool = false) throws {
            let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
            child = try ChildProcess(tool, ["step", path] + (small ? ["--small-thresholds"] : []) + (shared ? ["--shared"] : []), input: .held)
            watchdog = Watchdog(child, seconds: TestDeadline.long)
            #expect(child.readLine() == "ready", "\(child.errors)")
        }
        func set(_ key: String, _ size: Int) {
            sequence += 1
            #expect(child.ask("set \(key) \(size)") == "wrote \(key) \(sequence)", "\(child.errors)")
        }
        /// `count` sets of 5,000 bytes over `keys` keys named `prefix` and a number, each noted in `expected`.
        func fill(_ count: Int, keys: Int, prefix: String, noting expected: inout [StorageChange]) {
            for step in 0..<count {
                set("\(prefix)\(step % keys)", 5_000)
                expected.append(.add(key: "\(prefix)\(step % keys)"))
            }
        }
        func remove(_ key: String) { #expect(child.ask("remove \(key)") == "removed \(key)", "\(child.errors)") }
        func clear() { #expect(child.ask("clear") == "cleared", "\(child.errors)") }
        func close() {
            child.closeInput()
            #expect(child.wait(upTo: TestDeadline.long) && child.status == 0, "\(child.errors)")
            watchdog.cancel()
        }
        func kill() {
            child.kill()
            _ = child.wait(upTo: TestDeadline.long)
            watchdog.cancel()
        }
    }

    static func makeStore(_ folder: TemporaryDirectory) throws {
        _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
    }

    static func reader(_ folder: TemporaryDirectory) throws -> Storage<Data> {
        var config = folder.diskConfig()
        config.readOnly = true
        return try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
    }

    static func heard(_ storage: Storage<Data>, _ changes: Recorder<StorageChange>) throws -> [StorageChange] {
        _ = try storage.existsObject(forKey: "unrelated") // any call catches up
        storage.waitForObservers()
        return changes.received
    }

    /// A store made in `folder`, and a read-only storage of it whose observer records every change
    /// (marked: its registration's mark is placed before `allKeys`, which goes through the queue, returns).
    static func observedReader(_ folder: TemporaryDirectory) throws -> (Storage<Data>, Recorder<StorageChange>) {
        try makeStore(folder)
        let storage = try reader(folder)
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = storage.allKeys
        return (storage, changes)
    }

    /// A writer process fills about three segments and empties the store, then another opens and closes:
    /// the numbers of the segment files left.
    static func fillClearAndReopen(_ path: String) throws -> [UInt32] {
        let writer = try Writer(path, small: true)
        for step in 0..<40 { writer.set("k\(step % 10)", 5_000) }
        writer.clear()
        writer.set("z", 10)
        writer.close()
        try Writer(path, small: true).close()
        return try segmentIDs(path)
    }

    /// Where `heard` and `expected` first part, for a failure's message.
    static func difference(_ heard: [StorageChange], _ expected: [StorageChange]) -> String {
        let first = Array(zip(heard, expected)).firstIndex { $0.0 != $0.1 } ?? min(heard.count, expected.count)
        return "heard \(heard.count) changes, \(expected.count) were made; first difference at \(first): heard \(heard.dropFirst(first).prefix(3)), made \(expected.dropFirst(first).prefix(3))"
    }

    /// Sends `commands` to `writer` at once and calls `storage` without pause (any call catches up, while
    /// the writer works) until the writer has answered every one (each line after "ready" answers one).
    static func callWhileWorking(_ storage: Storage<Data>, _ writer: ChildProcess, _ commands: [String], keys: Int) throws {
        writer.send(commands.joined(separator: "\n") + "\n")
        for calls in 0... {
            _ = try storage.existsObject(forKey: "k\(calls % keys)")
            guard calls % 8 == 0 else { continue }
            let printed = writer.linesSoFar
            if printed.count > commands.count || printed.ended { break }
        }
    }

    /// The numbers of the segment files in the store's folder, kept ones (renamed for a reader) included.
    static func segmentIDs(_ path: String) throws -> [UInt32] {
        try FileManager.default.contentsOfDirectory(atPath: path).compactMap { name in
            SegmentFile.id(ofName: name.hasSuffix(SegmentFile.keptSuffix) ? String(name.dropLast(SegmentFile.keptSuffix.count)) : name)
        }.sorted()
    }

    static func valueFileCount(_ path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: path).filter(DiskStore.isValueFileName).count
    }

    // MARK: (1) missed changes

    /// A writer sets a key with a value file and empties the store, and closes; a second writer opens
    /// (and closes) before the observing reader calls again. The reader must hear the set.
    @Test("a value file a removeAll kept for a reader outlives the next writer's open, and its set is heard")
    func valueFileSurvivesNextWritersOpen() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let first = try Writer(path)
        first.set("k0", 100)
        first.set("k5", 300_000)
        first.clear()
        first.close()
        #expect(try Self.valueFileCount(path) == 1, "the first writer kept the value file for the reader")
        let second = try Writer(path)
        second.close()
        #expect(try Self.valueFileCount(path) == 1, "the second writer's open removed the value file kept for the reader")
        let heard = try Self.heard(storage, changes)
        #expect(heard == [.add(key: "k0"), .add(key: "k5"), .removeAll], "heard \(heard)")
    }

    /// Writers among several: one sets a key with a value file and empties the store; another writer,
    /// already open, then makes a call (it opens the store anew from its files); the observing reader
    /// calls after. It must hear the set.
    @Test("a value file one writer among several cleared is heard by a reader after another writer's call opened the store anew")
    func valueFileSurvivesOtherSharedWritersCatchUp() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let first = try Writer(path, shared: true)
        let second = try Writer(path, shared: true)
        first.set("k5", 300_000)
        first.clear()
        second.set("x", 100)
        let heard = try Self.heard(storage, changes)
        #expect(heard == [.add(key: "k5"), .removeAll, .add(key: "x")], "heard \(heard)")
        first.close()
        second.close()
    }

    /// Several removeAll in a row, each after a value file and segments filled (small thresholds).
    @Test("every change is heard across several removeAll in a row, each after value files and new segments")
    func severalRemoveAllInARow() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let writer = try Writer(path, small: true)
        var expected: [StorageChange] = []
        for round in 0..<3 {
            writer.fill(30, keys: 7, prefix: "k", noting: &expected)
            writer.set("v\(round)", 300_000); expected.append(.add(key: "v\(round)"))
            writer.clear(); expected.append(.removeAll)
        }
        writer.set("z", 10); expected.append(.add(key: "z"))
        let heard = try Self.heard(storage, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count); first difference at \(zip(heard, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? -1)")
        writer.close()
        _ = try Self.heard(storage, changes)
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// A set with a value file, then its removal, between two calls of the observer.
    @Test("a value set in a file and removed between two calls of the reader is heard as set, then removed")
    func valueFileSetThenRemoved() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let writer = try Writer(path)
        writer.set("k5", 300_000)
        writer.remove("k5")
        writer.set("k0", 10)
        let heard = try Self.heard(storage, changes)
        #expect(heard == [.add(key: "k5"), .remove(key: "k5"), .add(key: "k0")], "heard \(heard)")
        writer.close()
    }

    /// Observers cancelled: the reader stays open but observes nothing; it must hold nothing back.
    @Test("a reader whose observers were cancelled holds nothing back")
    func cancelledObserverHoldsNothing() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        let storage = try Self.reader(folder)
        let changes = Recorder<StorageChange>()
        let token = storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = storage.allKeys
        token.cancel()
        let ids = try Self.fillClearAndReopen(path)
        #expect(ids.count <= 2, "segments left for a reader that observes nothing: \(ids)")
        withExtendedLifetime(storage) {}
    }

    /// An AsyncStream of changes ended (its task cancelled): nothing held back after.
    @Test("a reader whose changes() stream ended holds nothing back")
    func endedStreamHoldsNothing() async throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        let storage = try Self.reader(folder)
        do {
            let stream = storage.changes()
            let task = Task { for await _ in stream {} }
            _ = storage.allKeys
            task.cancel()
            _ = await task.value
        }
        _ = storage.allKeys
        let ids = try Self.fillClearAndReopen(path)
        #expect(ids.count <= 2, "segments left for a reader whose stream ended: \(ids)")
        withExtendedLifetime(storage) {}
    }

    // MARK: (3) reported as damage / replayed

    /// A writer killed with segments and a value file retained; the next writer's open must report
    /// nothing, resurrect nothing, and the reader must hear everything.
    @Test("a writer killed while segments are kept for a reader: every change heard, no damage reported, nothing comes back")
    func writerKilledWhileRetaining() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        var storage: Storage<Data>? = try Self.reader(folder)
        let changes = Recorder<StorageChange>()
        storage?.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = storage?.allKeys
        let writer = try Writer(path, small: true)
        var expected: [StorageChange] = []
        writer.fill(40, keys: 10, prefix: "k", noting: &expected)
        writer.clear(); expected.append(.removeAll)
        // More segments after: the background deletion long done.
        writer.fill(30, keys: 5, prefix: "m", noting: &expected)
        writer.kill()
        let second = try Writer(path, small: true)
        second.set("y", 10); expected.append(.add(key: "y"))
        let heard = try Self.heard(storage!, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count)")
        #expect(storage?.recoveryIssues.isEmpty == true, "\(storage?.recoveryIssues ?? [])")
        for step in 0..<10 { #expect((try? storage?.object(forKey: "k\(step)")) == nil, "k\(step) came back") }
        second.close()
        storage = nil
        let check = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        #expect(check.recoveryIssues.isEmpty, "\(check.recoveryIssues)")
        for step in 0..<10 { #expect((try? check.object(forKey: "k\(step)")) == nil, "k\(step) came back") }
    }

    /// Compaction by shared writers in steps, reader observing; then a fresh reader open, writer open:
    /// nothing reported.
    @Test("writers among several compacting in steps: every change heard, and later opens report no damage")
    func stepCompactionThenFreshOpens() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        var storage: Storage<Data>? = try Self.reader(folder)
        let changes = Recorder<StorageChange>()
        storage?.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = storage?.allKeys
        let a = try Writer(path, shared: true, small: true)
        let b = try Writer(path, shared: true, small: true)
        var expected: [StorageChange] = []
        for step in 0..<120 {
            let w = step % 2 == 0 ? a : b
            w.set("k\(step % 3)", 5_000)
            expected.append(.add(key: "k\(step % 3)"))
        }
        a.close()
        b.close()
        let heard = try Self.heard(storage!, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count)")
        #expect(storage?.recoveryIssues.isEmpty == true, "\(storage?.recoveryIssues ?? [])")
        storage = nil
        do {
            let fresh = try Self.reader(folder)
            #expect(fresh.recoveryIssues.isEmpty, "\(fresh.recoveryIssues)")
        }
        let writer = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        #expect(writer.recoveryIssues.isEmpty, "\(writer.recoveryIssues)")
    }

    // MARK: (5) no observers

    /// A store with no observer at all: nothing kept, value files too.
    @Test("a reader without observers holds nothing back, value files included")
    func noObserversNothingRetained() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        let storage = try Self.reader(folder)
        _ = storage.allKeys
        let writer = try Writer(path, small: true)
        for step in 0..<40 { writer.set("k\(step % 10)", 5_000) }
        writer.set("v", 300_000)
        writer.clear()
        writer.set("z", 10)
        writer.close()
        #expect(try Self.valueFileCount(path) == 0)
        let ids = try Self.segmentIDs(path)
        #expect(ids.count <= 2, "\(ids)")
        _ = storage.allKeys
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    // MARK: removals that empty the store, closes, stash check, late registration, writers in turn and among several

    /// Removals one by one until the store is empty: past 64 KiB of records the writer resets the
    /// store (deleteEverything), deleting every segment. The observing reader must hear every change.
    @Test("removals that empty a store of more than 64 KiB, whose files then start anew, are all heard")
    func removalsThatEmptyTheStore() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let writer = try Writer(path, small: true)
        var expected: [StorageChange] = []
        writer.fill(40, keys: 10, prefix: "k", noting: &expected)
        for step in 0..<10 { writer.remove("k\(step)"); expected.append(.remove(key: "k\(step)")) }
        writer.set("z", 10); expected.append(.add(key: "z"))
        let heard = try Self.heard(storage, changes)
        #expect(heard == expected, "heard \(heard.count) changes, \(expected.count) were made; the last heard: \(heard.suffix(3))")
        writer.close()
    }

    /// Control for valueFileSurvivesNextWritersOpen: segments only (no value file).
    @Test("segments a removeAll retired are heard after the writer closed and the next writer opened and wrote")
    func segmentsSurviveNextWritersOpen() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let first = try Writer(path, small: true)
        var expected: [StorageChange] = []
        first.fill(40, keys: 10, prefix: "k", noting: &expected)
        first.clear(); expected.append(.removeAll)
        first.close()
        let second = try Writer(path, small: true)
        second.fill(20, keys: 4, prefix: "m", noting: &expected)
        second.clear(); expected.append(.removeAll)
        second.close()
        let heard = try Self.heard(storage, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count)")
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// `stash check` (read-only) while segments and a value file are retained for an observing reader.
    @Test("stash check reports no damage while segments are kept for a reader")
    func stashCheckWhileRetained() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, _) = try Self.observedReader(folder)
        let writer = try Writer(path, small: true)
        for step in 0..<40 { writer.set("k\(step % 10)", 5_000) }
        writer.set("v", 300_000)
        writer.clear()
        writer.set("z", 10)
        writer.close()
        let stash = try #require(builtExecutable(named: "stash"))
        let run = try ChildProcess.run(stash, ["--dir", path, "check"])
        #expect(run.status == 0 && run.output.contains("no damage found"), "\(run.output) \(run.stderr)")
        withExtendedLifetime(storage) {}
    }

    /// Registered right before the writer acts, with no call of the reader in between.
    @Test("an observer registered just before the writer fills and clears hears every change, with no call in between")
    func registeredJustBefore() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        try Self.makeStore(folder)
        let writer = try Writer(path, small: true)
        writer.set("a", 10)
        let storage = try Self.reader(folder)
        _ = storage.allKeys
        writer.set("b", 10)
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        var expected: [StorageChange] = []
        writer.fill(40, keys: 10, prefix: "k", noting: &expected)
        writer.clear(); expected.append(.removeAll)
        writer.close()
        let heard = try Self.heard(storage, changes)
        // "b" was written before the registration: it may or may not be heard.
        let tail = heard.first == .add(key: "b") ? Array(heard.dropFirst()) : heard
        #expect(tail == expected, "heard \(heard.count), expected \(expected.count)")
    }

    /// A writer compacts and closes, a second writer opens and compacts too, before the reader calls.
    @Test("compactions by two writers in turn before the reader calls: every change heard")
    func compactionsByTwoWritersInTurn() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        var expected: [StorageChange] = []
        for round in 0..<2 {
            let writer = try Writer(path, small: true)
            writer.fill(90, keys: 3, prefix: "k", noting: &expected)
            writer.remove("k1"); expected.append(.remove(key: "k1"))
            writer.close()
            _ = round
        }
        let heard = try Self.heard(storage, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count)")
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// Writers among several, one killed after it retained segments; the other goes on, clears again.
    @Test("writers among several, one killed after it kept segments for a reader: every change heard")
    func sharedWriterKilledAfterRetaining() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try Self.observedReader(folder)
        let a = try Writer(path, shared: true, small: true)
        let b = try Writer(path, shared: true, small: true)
        var expected: [StorageChange] = []
        for step in 0..<40 { (step % 2 == 0 ? a : b).set("k\(step % 10)", 5_000); expected.append(.add(key: "k\(step % 10)")) }
        a.clear(); expected.append(.removeAll)
        a.fill(20, keys: 10, prefix: "m", noting: &expected)
        a.kill()
        b.fill(20, keys: 10, prefix: "n", noting: &expected)
        b.clear(); expected.append(.removeAll)
        b.set("z", 10); expected.append(.add(key: "z"))
        let heard = try Self.heard(storage, changes)
        #expect(heard == expected, "heard \(heard.count), expected \(expected.count)")
        b.close()
        _ = try Self.heard(storage, changes)
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
        let ids = try Self.segmentIDs(path)
        withExtendedLifetime(storage) {}
        _ = ids
    }
}
