import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A crash in the middle of a compaction, after a `removeAll` wrote its clear record, or after a
/// snapshot and writes past it: the next open finds every key as it was last written, and a snapshot
/// whose segment is gone is not trusted.
@Suite("Operations a crash cut short", .serialized)
struct InterruptedOperationTests: DiskStoreScenario {
    @Test("a crash in the middle of a compaction is no damage: the inputs hold every record")
    func tornCompactionOutputIsNotDamage() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { try Self.set(store!, "k\(index)", Data(repeating: UInt8(index), count: 1000)) }
        let copy = try Self.beginCompactionByHand(store!)
        let result = DiskStore.compact(copy.records, seed: copy.seed, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        #expect(result.failure == nil)
        // The crash came while the output was being written: only part of its last write made it.
        let output = try #require(result.outputs.first)
        #expect(truncate(output.path, off_t(output.length - 500)) == 0)
        store!.log.folder.handle.unlock() // a crashed process holds no lock
        store = nil // no finish, no close: as after a crash
        let reopened = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { #expect(try Self.get(reopened, "k\(index)") == Data(repeating: UInt8(index), count: 1000)) }
        #expect(reopened.recoveryIssues.isEmpty, "nothing was lost, yet: \(reopened.recoveryIssues)")
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
        try store!.log.roll()
        try store!.log.append { buffer, salt in SegmentFormat.appendClear(salt: salt, to: &buffer) }
        store = nil
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".segment") }.count == 2)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "a"))
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".segment") } == [SegmentFile.name(of: 2)])
        try Self.set(reopened, "b", Data("beta".utf8))
        #expect(try Self.get(reopened, "b") == Data("beta".utf8))
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
            for index in 0..<20 { try store.writer.remove("k\(index)") }
            try Self.set(store, "k25", Data("v25 again".utf8))
            _ = try store.read("k29", now: Self.now.addingTimeInterval(10))
            let held = HeldCompaction(store)
            held.start(store)
            try store.writer.remove("k21")
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
            try store.log.roll()
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
}
