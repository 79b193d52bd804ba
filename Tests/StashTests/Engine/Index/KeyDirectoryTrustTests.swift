import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The key directory is taken at open only when it still matches the segments: entries a batch wrote
/// are found through it, a directory found stale once (a power cut took the segment's tail) or written
/// by a copy of the store that went on writing is never taken, a segment removed at open does not make
/// it stale, and a folder in its place does not keep compaction from freeing space.
@Suite("When the key directory is trusted", .serialized)
struct KeyDirectoryTrustTests: KeyDirectoryScenario {
    /// A batch's set records were indexed with no key hash (0): the directory file then held them
    /// as empty slots, so every entry a batch wrote vanished once a directory was written.
    @Test("entries written by a batch are found again through the key directory")
    func batchEntriesSurviveTheDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            let changes: [DiskBatchChange] = (0..<6).map { .set(key: "batch \($0)", data: Self.payload($0), expiry: .distantFuture) }
            _ = try store!.writer.writeBatch(changes, now: Self.now, maxSize: 0, durable: false)
            try Self.set(store!, "single", Self.payload(99))
            store!.close()
            store = nil
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(reopened.recoveryIssues.isEmpty)
            #expect(reopened.withIndex { $0.count } == 7)
            for index in 0..<6 {
                #expect(Self.value(reopened, "batch \(index)") == Self.payload(index), "batch \(index) was lost")
            }
            #expect(Self.value(reopened, "single") == Self.payload(99))
            // In the same process too: compaction writes the directory and maps it as the new base.
            _ = try reopened.writer.writeBatch([.set(key: "later batch", data: Self.payload(7), expiry: .distantFuture)],
                                        now: Self.now, maxSize: 0, durable: false)
            try reopened.compactNow()
            #expect(Self.value(reopened, "later batch") == Self.payload(7))
            #expect(reopened.withIndex { $0.keys.count } == 8)
            reopened.close()
        }
    }

    /// A directory claims records up to its position; a power cut can take the segment's unsynced
    /// tail (the directory itself is written durably). The open that finds the segment shorter
    /// replays it whole; but the stale directory stayed, so once later writes made the segment long
    /// enough again (and no new directory was written: a crash, or a store below the minimum), the
    /// next open took it: entries the power cut had lost came back, and replay began mid-record.
    @Test("a directory found stale once is never taken again after the segment grows past its position")
    func staleDirectoryIsNotTakenLater() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        var kept = 0
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<10 {
                try Self.set(store, "old \(index)", Self.payload(index))
                if index == 6 { kept = try Damage.recordsEnd(segment) }
            }
            store.close()
        }
        // What a power cut leaves: the durable directory, the segment without its unsynced tail.
        try Damage.write(Array(try Damage.bytes(segment).prefix(kept)), to: segment)
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            #expect(Self.value(store!, "old 9") == nil)
            for index in 0..<10 { try Self.set(store!, "new \(index)", Self.payload(index, 1)) }
            store = nil // a crash: no close, no new directory
            let reopened = try DiskStore(directory: path, readOnly: false)
            for index in 0..<7 { #expect(Self.value(reopened, "old \(index)") == Self.payload(index), "old \(index)") }
            for index in 7..<10 { #expect(Self.value(reopened, "old \(index)") == nil, "old \(index) came back") }
            for index in 0..<10 { #expect(Self.value(reopened, "new \(index)") == Self.payload(index, 1), "new \(index) was lost") }
            #expect(reopened.withIndex { $0.count } == 17)
            reopened.close()
        }
    }

    /// Opening removes the oldest segments no entry names any longer; when the directory named
    /// them, it was rejected at every later open ("damaged or stale") until something rewrote it.
    /// Now such a segment stays until a directory that no longer names it is written (at close).
    @Test("a segment opening removes does not leave the directory that names it to be reported stale")
    func segmentRemovedAtOpenDoesNotStaleTheDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1, segmentLimit: 1024) {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<10 { try Self.set(store, "key \(index)", Self.payload(index)) }
            store.close() // the directory names segment 1
            var again: DiskStore? = try DiskStore(directory: path, readOnly: false)
            for index in 0..<10 { try Self.set(again!, "key \(index)", Self.payload(index, 1)) }
            again = nil // a crash: the directory stays the old one
            let third = try DiskStore(directory: path, readOnly: false)
            #expect(third.recoveryIssues.isEmpty)
            third.close() // nothing changed: only a directory that no longer names segment 1 is written
            let fourth = try DiskStore(directory: path, readOnly: false)
            #expect(fourth.recoveryIssues.isEmpty, "\(fourth.recoveryIssues)")
            #expect(!FileManager.default.fileExists(atPath: Self.segmentPath(path, 1)), "the dead segment stays")
            for index in 0..<10 { #expect(Self.value(fourth, "key \(index)") == Self.payload(index, 1)) }
            fourth.close()
        }
    }

    /// A folder named like the directory: compaction could neither write the directory nor remove
    /// it, and then kept its inputs, so every compaction added a copy of the live data.
    @Test("a folder in the directory's place does not keep compaction from freeing space")
    func folderInTheDirectorysPlace() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, compactionMinimum: 4096, directoryMinimum: 1, segmentLimit: 4096) {
            var storage: DiskStorage<Data>? = try openDataStore(path)
            try storage!.setObject(Self.payload(0), forKey: "first")
            try FileManager.default.createDirectory(atPath: Self.directoryPath(path), withIntermediateDirectories: false)
            for round in 0..<40 {
                for index in 0..<10 { try storage!.setObject(Self.payload(index, round), forKey: "key \(index)") }
                storage!.waitForCompaction()
            }
            storage!.settleCompaction() // the bytes measured do not depend on when the last compaction ran
            // Records, not file lengths: the segment appended to has room reserved past its records.
            let bytes = try StoreFiles(path).segments.reduce(0) { $0 + (try Damage.recordsEnd(path + "/" + $1)) }
            #expect(bytes < 64 << 10, "\(bytes) bytes of segments for 11 entries of ~230 bytes")
            for index in 0..<10 { #expect(try storage!.object(forKey: "key \(index)") == Self.payload(index, 39)) }
            storage = nil
            let reopened = try openDataStore(path)
            for index in 0..<10 { #expect(try reopened.object(forKey: "key \(index)") == Self.payload(index, 39)) }
        }
    }

    /// A store folder copied (a backup restored beside it, a cloned container) has the same identity
    /// and segment salts; after both went on writing, the copy's directory matched the other's
    /// segment by salt and length: its entries named the other's records, and replay skipped the
    /// other's records before the copy's position.
    @Test("a directory of a copy of the store that went on writing is not taken")
    func directoryOfADivergedCopy() throws {
        let directory = TemporaryDirectory()
        let original = directory.storePath("original"), copy = directory.storePath("copy")
        try withEngineThresholds(in: directory.url.path, directoryMinimum: 1) {
            do {
                let store = try DiskStore(directory: original, readOnly: false)
                for index in 0..<5 { try Self.set(store, "shared \(index)", Self.payload(index)) }
                store.close()
            }
            try FileManager.default.copyItem(atPath: original, toPath: copy)
            do {
                let store = try DiskStore(directory: copy, readOnly: false)
                for index in 0..<5 { try Self.set(store, "copy \(index)", Self.payload(index, 1)) }
                store.close() // its directory: past the records the two share
            }
            var store: DiskStore? = try DiskStore(directory: original, readOnly: false)
            for index in 0..<10 { try Self.set(store!, "original \(index)", Self.payload(index, 2)) }
            store = nil // a crash: the original's directory stays the one before the copy
            try FileManager.default.removeItem(atPath: Self.directoryPath(original))
            try FileManager.default.copyItem(atPath: Self.directoryPath(copy), toPath: Self.directoryPath(original))
            let reopened = try DiskStore(directory: original, readOnly: false)
            for index in 0..<5 { #expect(Self.value(reopened, "shared \(index)") == Self.payload(index)) }
            for index in 0..<10 { #expect(Self.value(reopened, "original \(index)") == Self.payload(index, 2), "original \(index) was lost") }
            for index in 0..<5 { #expect(reopened.record(forKey: "copy \(index)") == nil, "copy \(index) is the copy's") }
            #expect(reopened.withIndex { $0.count } == 15)
            reopened.close()
        }
    }
}
