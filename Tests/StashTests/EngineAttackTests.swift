import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Attacks on the version-2 disk engine: races of the background compaction with a store that is
/// closed and opened again, with the folder's removal, and with writes; format edge cases (key and
/// value lengths at the LEB128 and value-file boundaries, the segment limit); snapshots that went
/// stale. Each test named after an engine bug reproduced it before its fix.
///
/// Most tests drive ``DiskStore`` directly, so a compaction can be held between its copy (off the
/// queue) and its finish (on the queue) and the race is deterministic instead of timing-dependent.
@Suite("Engine attack", .serialized)
struct EngineAttackTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Helpers

    static func set(_ store: DiskStore, _ key: String, _ data: Data, asFile: Bool = false, at time: Date = now) throws {
        let result = try store.write(key, data, expiry: .distantFuture, now: time, maxSize: 0, durable: false,
                                     storesValuesAsFiles: asFile)
        result.replaced?.remove() // what the engine does off the queue
    }

    static func get(_ store: DiskStore, _ key: String) throws -> Data {
        try store.read(key, now: now).data
    }

    static func isNotFound(_ store: DiskStore, _ key: String) -> Bool {
        do {
            _ = try store.read(key, now: now)
            return false
        } catch let error as StorageError {
            return error.isNotFound
        } catch {
            return false
        }
    }

    /// What ``DiskStore/startCompactionIfNeeded()`` captures before it copies off the queue, taken by
    /// hand: the copy can then run at a moment the test chooses (a thread that was delayed).
    static func beginCompactionByHand(_ store: DiskStore) throws
        -> (entries: [(key: String, value: DiskRecord)], victims: [SegmentFile], first: UInt32, folder: FolderHandle, store: UInt64) {
        let first = store.nextSegmentID
        store.nextSegmentID += 1
        try store.roll()
        let victims = store.segments.values.filter { $0.id < first }.sorted { $0.id < $1.id }
        let entries = store.withIndex { $0.entriesOldestFirst }
        store.isCompacting = true
        return (entries, victims, first, store.folder.handle, store.folder.storeID)
    }

    /// Catches `store`'s compactions between their copy (off the queue) and their finish, which the
    /// test runs when it likes (``finish(_:)``): writes can be made while the copy is in flight.
    final class HeldCompaction: @unchecked Sendable {
        // @unchecked Sendable: `work` is set on the compaction's thread before `ready` is signalled.
        let ready = DispatchSemaphore(value: 0)
        var work: (@Sendable (DiskStore) -> Void)?

        init(_ store: DiskStore) {
            store.schedule = { [self] work in
                self.work = work
                ready.signal()
            }
        }

        /// Starts a real compaction now, unless one is under way: the threshold is lowered and the
        /// active segment's dead bytes raised until every byte counts as dead (the active segment is
        /// sealed and becomes an input, so the raised count goes with it).
        func start(_ store: DiskStore) {
            guard !store.isCompacting, let active = store.active else { return }
            let minimum = store.thresholds.compactionMinimum
            store.thresholds.compactionMinimum = 0
            defer { store.thresholds.compactionMinimum = minimum }
            let total = store.segments.values.reduce(0) { $0 + $1.length - SegmentFormat.headerLength }
            let dead = store.segments.values.reduce(0) { $0 + $1.deadBytes }
            active.deadBytes += max(1, total - dead)
            store.startCompactionIfNeeded()
        }

        /// Waits for the copy of the compaction under way and runs its finish on this thread.
        @discardableResult
        func finish(_ store: DiskStore) -> Bool {
            guard ready.wait(timeout: .now() + 30) == .success, let work else { return false }
            self.work = nil
            work(store)
            return true
        }
    }

    static func compactNow(_ store: DiskStore) -> Bool {
        let held = HeldCompaction(store)
        held.start(store)
        return held.finish(store)
    }

    static func fileNames(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    // MARK: Compaction racing with a close and a new open

    @Test("a compaction still copying when its store is closed cannot bring a key removed later back")
    func closedStoresCompactionResurrectsRemovedKey() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var first: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<3 { try Self.set(first!, "k\(index)", Data("value \(index)".utf8)) }
        // The first store starts a compaction; before its thread gets to create its output, the
        // store is closed and released (its engine's last storage went away), which frees the lock.
        let copy = try Self.beginCompactionByHand(first!)
        first!.close()
        first = nil
        // A new store opens the folder: the output does not exist yet, so it is no segment of it.
        var second: DiskStore? = try DiskStore(directory: path, readOnly: false)
        #expect(second!.segments[copy.first] == nil)
        // Now the old thread runs: it writes its output (every key as of its start) into the folder.
        let result = DiskStore.compact(copy.entries, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        #expect(result.failure == nil)
        // The new store removes two keys and compacts: tombstones are not copied, the inputs go.
        try second!.remove("k0")
        try second!.remove("k1")
        #expect(Self.compactNow(second!))
        #expect(Self.isNotFound(second!, "k0"))
        second!.close()
        second = nil
        // Reopened: the orphan output (a lower id than the new store's segments) replays first and
        // nothing removes its keys any more.
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "k0"), "k0 was removed, yet it is back: \(Self.fileNames(path))")
        #expect(Self.isNotFound(reopened, "k1"))
        #expect(try Self.get(reopened, "k2") == Data("value 2".utf8))
    }

    @Test("a compaction in flight when the folder is removed writes none of the old data into the new folder")
    func compactionAfterFolderRemovalLeaksOldDataIntoNewFolder() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "secret", Data("deleted with the folder".utf8))
        let copy = try Self.beginCompactionByHand(store!)
        // The user deletes the folder; the next write starts the store over in a new folder.
        try FileManager.default.removeItem(atPath: path)
        try Self.set(store!, "fresh", Data("new".utf8))
        #expect(Self.isNotFound(store!, "secret"))
        // The compaction thread (it read the deleted segments through its open descriptors) now
        // creates its output: by path, so in the new folder.
        let result = DiskStore.compact(copy.entries, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        // The store is closed (or the process dies) before the discarded compaction's finish removed it.
        _ = result
        store!.close()
        store = nil
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "secret"), "a value of the removed folder is back: \(Self.fileNames(path))")
        #expect(try Self.get(reopened, "fresh") == Data("new".utf8))
    }

    @Test("a crash in the middle of a compaction is no damage: the inputs hold every record")
    func tornCompactionOutputIsNotDamage() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { try Self.set(store!, "k\(index)", Data(repeating: UInt8(index), count: 1000)) }
        let copy = try Self.beginCompactionByHand(store!)
        let result = DiskStore.compact(copy.entries, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        #expect(result.failure == nil)
        // The crash came while the output was being written: only part of its last write made it.
        let output = try #require(result.outputs.first)
        #expect(truncate(output.path, off_t(output.length - 500)) == 0)
        store!.folder.handle.unlock() // a crashed process holds no lock
        store = nil // no finish, no close: as after a crash
        let reopened = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { #expect(try Self.get(reopened, "k\(index)") == Data(repeating: UInt8(index), count: 1000)) }
        #expect(reopened.recoveryIssues.isEmpty, "nothing was lost, yet: \(reopened.recoveryIssues)")
    }

    // MARK: The folder removed underneath

    @Test("a large value staged before its folder was removed is not lost: the write that returned reads back")
    func stagedValueFileAndFolderRemoval() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try DiskStore(directory: path, readOnly: false)
        try Self.set(store, "old", Data("old".utf8))
        let data = Data(repeating: 9, count: ValueFiles.threshold)
        // `DiskEngine.stage` writes the value file on the caller's thread, before the write enters the queue...
        let staged = try StagedValue(store.values.write(data, durable: false), folder: store.values.handle, size: data.count)
        // ...and the folder is removed in between (iOS purges Caches folders of running apps).
        try FileManager.default.removeItem(atPath: path)
        let result = try store.write("big", data, staged: staged, expiry: .distantFuture, now: Self.now, maxSize: 0, durable: false)
        #expect(result.path.map { FileManager.default.fileExists(atPath: $0) } == true, "the write returned, its file is gone")
        #expect(try Self.get(store, "big") == data)
    }

    // Contract 6: a removeAll whose process ended before its old segments were deleted leaves them
    // dead behind its clear record; the next open removes them and the store stays empty.
    @Test("segments before a clear record that removeAll had no time to delete are removed at the next open")
    func segmentsBeforeClearAreRemovedAtOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "a", Data("alpha".utf8))
        // What removeAll writes, without its background deletion of the old segment.
        try store!.roll()
        try store!.append { buffer, salt in SegmentFormat.appendClear(salt: salt, to: &buffer) }
        store = nil
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".segment") }.count == 2)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "a"))
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".segment") } == [SegmentFile.name(of: 2)])
        try Self.set(reopened, "b", Data("beta".utf8))
        #expect(try Self.get(reopened, "b") == Data("beta".utf8))
    }

    @Test("a folder removed and replaced by a user's own folder is not made a store by the next write")
    func startOverIntoForeignFolder() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try DiskStore(directory: path, readOnly: false)
        try Self.set(store, "k", Data("v".utf8))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data("the user's own file".utf8).write(to: URL(fileURLWithPath: path + "/notes.txt"))
        // A non-empty folder without the marker is refused at open (Contract item 13); a write of a
        // store that is already open should refuse it just the same.
        let error = storageError { try Self.set(store, "k2", Data("v2".utf8)) }
        #expect(error.map { if case .notAStore = $0 { true } else { false } } == true, "\(String(describing: error))")
        #expect(Self.fileNames(path) == ["notes.txt"], "files were created in the user's folder")
    }

    // MARK: The version-1 upgrade

    /// Writes a version-1 store: its journal and one file per value.
    static func writeVersion1Store(at path: String, _ values: [(key: String, data: Data, lastAccess: Double)]) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var journal = JournalFormat.magic
        for (index, value) in values.enumerated() {
            let generation = UInt64(index + 1)
            let info = V1Record(generation: generation, size: value.data.count,
                                expiry: Date.distantFuture.timeIntervalSince1970, lastAccess: value.lastAccess)
            JournalFormat.append(.set(key: value.key, info), to: &journal)
            try value.data.write(to: URL(fileURLWithPath: path + "/" + DiskStore.version1FileName(forKey: value.key, generation: generation)))
        }
        try Data(journal).write(to: URL(fileURLWithPath: path + "/" + StoreFolder.v1JournalName))
    }

    @Test("an upgrade that a crash cut short after the marker was written: the version-1 files are removed at the next open")
    func upgradeInterruptedAfterMarker() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let values = [(key: "a", data: Data("alpha".utf8), lastAccess: 1_800_000_000.0),
                      (key: "", data: Data(repeating: 3, count: ValueFiles.threshold), lastAccess: 1_800_000_001.0)]
        try Self.writeVersion1Store(at: path, values)
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            #expect(try Self.get(store, "a") == Data("alpha".utf8))
            #expect(try Self.get(store, "") == values[1].data)
            #expect(!Self.fileNames(path).contains(StoreFolder.v1JournalName))
        }
        // The state a crash leaves between `writeMarker()` and the removal of the old files.
        try Self.writeVersion1Store(at: path, values)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(reopened, "a") == Data("alpha".utf8))
        let leftovers = Self.fileNames(path).filter { $0 == StoreFolder.v1JournalName || DiskStore.isVersion1FileName($0) }
        #expect(leftovers.isEmpty, "version-1 files left behind for good: \(leftovers)")
    }

    @Test("a version-1 value whose last access is NaN is carried over, not dropped as damage")
    func upgradeWithNaNLastAccess() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try Self.writeVersion1Store(at: path, [(key: "a", data: Data("alpha".utf8), lastAccess: .nan),
                                               (key: "b", data: Data("beta".utf8), lastAccess: 1_800_000_000)])
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(store, "b") == Data("beta".utf8))
        #expect(try Self.get(store, "a") == Data("alpha".utf8), "\(store.recoveryIssues)")
    }

    // MARK: Compaction racing with writes (these hold)

    @Test("writes, overwrites and removals of value files while a compaction copies: right values, no orphan, no loss")
    func valueFilesDuringCompaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<6 { try Self.set(store, "f\(index)", Data("file \(index)".utf8), asFile: true) }
            for index in 0..<6 { try Self.set(store, "dead\(index)", Data(repeating: 1, count: 2000)) }
            for index in 0..<6 { try store.remove("dead\(index)") }
            let held = HeldCompaction(store)
            held.start(store)
            try Self.set(store, "f0", Data("file 0, again".utf8), asFile: true) // overwrite during the copy
            try store.remove("f1")
            try Self.set(store, "big", Data(repeating: 7, count: ValueFiles.threshold))
            try Self.set(store, "f2", Data("now inline".utf8)) // a file value replaced by an inline one
            #expect(held.finish(store))
            #expect(try Self.get(store, "f0") == Data("file 0, again".utf8))
            #expect(Self.isNotFound(store, "f1"))
            store.close()
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(try Self.get(reopened, "f0") == Data("file 0, again".utf8))
        #expect(Self.isNotFound(reopened, "f1"))
        #expect(try Self.get(reopened, "f2") == Data("now inline".utf8))
        #expect(try Self.get(reopened, "big") == Data(repeating: 7, count: ValueFiles.threshold))
        for index in 3..<6 { #expect(try Self.get(reopened, "f\(index)") == Data("file \(index)".utf8)) }
        // f0 (new), f3, f4, f5, big: exactly the files the index names.
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".value") }.count == 5, "\(Self.fileNames(path))")
    }

    @Test("removeAll while a compaction copies, then a crash before anything else: the store is empty")
    func removeAllDuringCompaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<10 { try Self.set(store, "k\(index)", Data(repeating: 2, count: 3000), asFile: index < 3) }
            for index in 5..<10 { try store.remove("k\(index)") }
            let held = HeldCompaction(store)
            held.start(store)
            try store.removeAll()
            try Self.set(store, "after", Data("after".utf8))
            #expect(held.finish(store))
            // No close: the process dies here.
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.keys == ["after"])
        #expect(try Self.get(reopened, "after") == Data("after".utf8))
    }

    @Test("a snapshot, writes after it, a compaction, a crash: every key right after the reopen")
    func snapshotThenCompactionThenCrash() throws {
        let directory = TemporaryDirectory()
        DiskStore.thresholdOverrides.withLock { $0[directory.path] = DiskStore.Thresholds(directoryMinimum: 1) }
        defer { DiskStore.thresholdOverrides.withLock { $0[directory.path] = nil } }
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<30 { try Self.set(store, "k\(index)", Data("v\(index)".utf8)) }
            store.close() // writes a snapshot
        }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            #expect(store.recoveryIssues.isEmpty)
            for index in 0..<20 { try store.remove("k\(index)") }
            try Self.set(store, "k25", Data("v25 again".utf8))
            _ = try store.read("k29", now: Self.now.addingTimeInterval(10))
            let held = HeldCompaction(store)
            held.start(store)
            try store.remove("k21")
            try Self.set(store, "k22", Data("v22 again".utf8))
            #expect(held.finish(store))
            try Self.set(store, "k0", Data("back".utf8))
            // No close: a crash.
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        var expected: [String: String] = ["k0": "back", "k20": "v20", "k22": "v22 again", "k25": "v25 again"]
        for index in [23, 24, 26, 27, 28, 29] { expected["k\(index)"] = "v\(index)" }
        #expect(Set(reopened.keys) == Set(expected.keys))
        for (key, value) in expected { #expect(try Self.get(reopened, key) == Data(value.utf8), "\(key)") }
    }

    @Test("a snapshot whose segment is gone is ignored: the segments are replayed whole")
    func snapshotNamingAMissingSegment() throws {
        let directory = TemporaryDirectory()
        DiskStore.thresholdOverrides.withLock { $0[directory.path] = DiskStore.Thresholds(directoryMinimum: 1) }
        defer { DiskStore.thresholdOverrides.withLock { $0[directory.path] = nil } }
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            try Self.set(store, "a", Data("a".utf8))
            try store.roll()
            try Self.set(store, "b", Data("b".utf8))
            store.close() // the snapshot names segment 2
        }
        // Segment 2 is lost (a user deleted it); segment 1 still holds "a".
        try FileManager.default.removeItem(atPath: path + "/" + SegmentFile.name(of: 2))
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(reopened, "a") == Data("a".utf8))
        #expect(!reopened.recoveryIssues.isEmpty)
        #expect(Self.isNotFound(reopened, "b"))
    }

    // MARK: Format edge cases (these hold)

    @Test("keys of 0, 127, 128, 16383, 16384 and 1 MiB bytes, values empty and around 256 KiB: round trip, reopen, compaction, snapshot")
    func lengthEdges() throws {
        let directory = TemporaryDirectory()
        DiskStore.thresholdOverrides.withLock { $0[directory.path] = DiskStore.Thresholds(directoryMinimum: 1) }
        defer { DiskStore.thresholdOverrides.withLock { $0[directory.path] = nil } }
        let path = directory.storePath()
        let keyLengths = [0, 1, 127, 128, 16383, 16384, DiskStore.maxKeyLength]
        let valueLengths = [0, 1, 127, 128, ValueFiles.threshold - 1, ValueFiles.threshold, ValueFiles.threshold + 1]
        var expected: [String: Data] = [:]
        for (index, keyLength) in keyLengths.enumerated() {
            let key = String(repeating: "k", count: keyLength)
            expected[key] = Data(repeating: UInt8(index), count: valueLengths[index])
        }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for (key, value) in expected { try Self.set(store, key, value) }
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            store.close()
        }
        do {
            let store = try DiskStore(directory: path, readOnly: false) // from the snapshot
            #expect(store.recoveryIssues.isEmpty, "\(store.recoveryIssues)")
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            try store.remove("")
            expected[""] = nil
            try Self.set(store, String(repeating: "k", count: 128), Data()) // inline, empty, over a 127-byte value
            expected[String(repeating: "k", count: 128)] = Data()
            #expect(Self.compactNow(store))
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            // No close: replay from the compaction's snapshot.
        }
        try FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
        let reopened = try DiskStore(directory: path, readOnly: false) // replayed whole
        #expect(Set(reopened.keys) == Set(expected.keys))
        for (key, value) in expected { #expect(try Self.get(reopened, key) == value, "key of \(key.utf8.count) bytes") }
        #expect(throws: StorageError.self) { try Self.set(reopened, String(repeating: "k", count: DiskStore.maxKeyLength + 1), Data()) }
    }

    @Test("the active segment reaching 64 MiB: a new one is started, and everything reads back after a compaction and a reopen")
    func segmentLimit() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let valueSize = ValueFiles.threshold - 1 // the largest inline value
        let count = DiskStore.Thresholds.standard.segmentLimit / valueSize + 8
        func value(_ index: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: index), count: valueSize) }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            let held = HeldCompaction(store) // the removals below start one on their own
            for index in 0..<count { try Self.set(store, "k\(index)", value(index)) }
            #expect(store.segments.count >= 2)
            #expect(store.segments.values.allSatisfy { $0.length <= DiskStore.Thresholds.standard.segmentLimit + valueSize + 1024 })
            for index in 0..<count where index % 3 != 0 { try store.remove("k\(index)") }
            held.start(store)
            #expect(held.finish(store))
            for index in stride(from: 0, to: count, by: 3) { #expect(try Self.get(store, "k\(index)") == value(index)) }
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(reopened.keys.count == (count + 2) / 3)
        for index in stride(from: 0, to: count, by: 3) { #expect(try Self.get(reopened, "k\(index)") == value(index)) }
    }

    @Test("access records of reads made while a compaction copied keep the LRU order across a restart")
    func accessDuringCompactionSurvivesRestart() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<4 {
                try Self.set(store, "k\(index)", Data(repeating: 1, count: 100), at: Self.now.addingTimeInterval(Double(index)))
            }
            try Self.set(store, "dead", Data(repeating: 1, count: 2000))
            try store.remove("dead")
            let held = HeldCompaction(store)
            held.start(store)
            _ = try store.read("k0", now: Self.now.addingTimeInterval(100)) // k0: now the most recent
            #expect(held.finish(store))
            try store.flushAccesses()
            #expect(store.withIndex { $0.entriesOldestFirst.map(\.key) } == ["k1", "k2", "k3", "k0"])
            // No close: a crash (close would write the order in a snapshot only for a large store).
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.withIndex { $0.entriesOldestFirst.map(\.key) } == ["k1", "k2", "k3", "k0"],
                "k0, read last, would be evicted first")
    }
}
