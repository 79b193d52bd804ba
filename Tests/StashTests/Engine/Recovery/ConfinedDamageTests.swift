import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract items 6 and 7 for the version-2 files: damage in any file of a store loses at most the
/// records it touches, is never returned as a value (every record and value file is verified on
/// read), and power-loss damage (a torn or zero-filled tail, flipped bytes, a same-size edit of a
/// value file, a damaged snapshot) leaves every other value readable and the store writable.
@Suite("Confined damage and power loss", .serialized)
struct ConfinedDamageTests {
    static let smallCount = 1000
    static let largeKeys = ["large-0", "large-1", "large-2"]

    /// The value written for `key`: 200 bytes for the small keys, 300 KiB (a file of its own) for the large.
    static func value(for key: String) -> Data {
        var random = SeededGenerator(seed: key.utf8.reduce(7) { $0 &* 31 &+ UInt64($1) })
        let count = key.hasPrefix("large") ? 300 << 10 : 200
        return Data((0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    static var allKeys: [String] { (0..<smallCount).map { "key-\($0)" } + largeKeys }

    /// A closed store of 1,000 small values and three large ones (with a snapshot: the minimum is lowered).
    private func fill(_ path: String) throws {
        try withEngineThresholds(in: path, directoryMinimum: 500) {
            let disk = try openDataStore(path)
            for key in Self.allKeys { try disk.setObject(Self.value(for: key), forKey: key) }
        }
    }

    /// Reads every key: each is the exact value, or notFound / corrupted — never another value.
    /// - Returns: How many exact values were read.
    private func readAll(_ disk: DiskStorage<Data>, context: String) -> Int {
        var exact = 0
        for key in Self.allKeys {
            do {
                let data = try disk.object(forKey: key)
                #expect(data == Self.value(for: key), "\(context): \(key) read \(data.count) wrong bytes")
                if data == Self.value(for: key) { exact += 1 }
            } catch let error as StorageError where error.isNotFound || error.isCorrupted {
                continue
            } catch {
                Issue.record("\(context): \(key) threw \(error)")
            }
        }
        return exact
    }

    private func copy(_ from: String, to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    // Issue #16 "Confined damage": one flipped byte anywhere in any file loses at most the records it touches.
    @Test("a flipped byte in any file of the store loses at most the records it touches (≥ 990 of 1,003 exact, none wrong)")
    func flippedByteInEachFile() throws {
        let directory = TemporaryDirectory()
        let pristine = directory.storePath("pristine")
        try fill(pristine)
        let files = try StoreFiles(pristine)
        #expect(files.segments.count >= 1)
        #expect(files.values.count == Self.largeKeys.count)
        #expect(files.others.contains(StoreFolder.directoryName), "the store was closed with a snapshot")
        var random = SeededGenerator(seed: 1_003)
        var damagedFiles = 0
        for name in files.all {
            let size = try Damage.size(pristine + "/" + name)
            guard size > 0 else { continue } // the lock file is empty: nothing to flip
            for attempt in 0..<3 {
                let store = directory.storePath("damaged")
                try copy(pristine, to: store)
                let offset = random.below(size)
                try Damage.flip(store + "/" + name, at: offset, with: UInt8(random.below(255) + 1))
                let context = "\(name) byte \(offset) (try \(attempt))"
                let disk = try openDataStore(store)
                let exact = readAll(disk, context: context)
                #expect(exact >= 990, "\(context): only \(exact) exact values")
                // The store still takes writes, and what was damaged is gone or reported.
                try disk.setObject(Data("after".utf8), forKey: "after")
                #expect(try disk.object(forKey: "after") == Data("after".utf8))
                damagedFiles += 1
            }
        }
        #expect(damagedFiles >= 3 * (files.segments.count + files.values.count + 2))
    }

    // Issue #16: a same-size edit of a large value's file is caught by its checksum.
    @Test("a same-size rewrite of every value file is caught; the other values stay exact")
    func sameSizeEditOfValueFiles() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try fill(store)
        for name in try StoreFiles(store).values {
            let path = store + "/" + name
            try Damage.write(try Damage.bytes(path).reversed(), to: path)
        }
        let disk = try openDataStore(store)
        #expect(readAll(disk, context: "same-size edits") == Self.smallCount)
        for key in Self.largeKeys {
            #expect(storageError { _ = try disk.object(forKey: key) }?.isNotFound == true, "\(key) was dropped after corrupted")
        }
        #expect(Set(disk.allKeys) == Set(Self.allKeys).subtracting(Self.largeKeys))
    }

    // MARK: Power loss

    /// A store with keys k0…k19 (small values), closed; returns its only segment's path.
    private func smallStore(_ store: String, valuesAsFiles: Bool = false) throws -> String {
        let disk = try openDataStore(store, valuesAsFiles: valuesAsFiles)
        for index in 0..<20 { try disk.setObject(Data("value \(index)".utf8), forKey: "k\(index)") }
        let segments = try StoreFiles(store).segments
        try #require(segments.count == 1)
        return store + "/" + segments[0]
    }

    private func expectIntact(_ disk: DiskStorage<Data>, except lost: Set<Int>, _ context: String) {
        for index in 0..<20 where !lost.contains(index) {
            #expect((try? disk.object(forKey: "k\(index)")) == Data("value \(index)".utf8), "\(context): k\(index)")
        }
    }

    // Contract 6: a write cut short by a power loss tears the last record; it is cut off, the rest stays.
    @Test("a torn tail of the last segment is cut off; every earlier value stays and writes go on", arguments: [1, 5, 12])
    func tornTail(bytes: Int) throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let segment = try smallStore(store)
        try Damage.cut(segment, last: bytes)
        do {
            let disk = try openDataStore(store)
            expectIntact(disk, except: [19], "torn tail")
            #expect(storageError { _ = try disk.object(forKey: "k19") }?.isNotFound == true)
            #expect(disk.recoveryIssues.count == 1)
            try disk.setObject(Data("new".utf8), forKey: "new")
        }
        let again = try openDataStore(store)
        #expect(again.recoveryIssues.isEmpty, "the torn bytes were cut off, not appended after")
        #expect(Set(again.allKeys) == Set((0..<19).map { "k\($0)" } + ["new"]))
        #expect(try again.object(forKey: "new") == Data("new".utf8))
    }

    // A power loss after the file grew but before its data reached the disk leaves zeros. So does a
    // crash of a writer that reserved room for appends: zeros after the last record are that room, not
    // damage (Docs/Format.md, "Room reserved for appends"), and are cut off without a report.
    @Test("a zero-filled tail (the file grew, its data never landed) is cut off; nothing is lost", arguments: [1, 100, 4096])
    func zeroFilledTail(bytes: Int) throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let segment = try smallStore(store)
        let records = try Damage.size(segment)
        try Damage.append([UInt8](repeating: 0, count: bytes), to: segment)
        do {
            let disk = try openDataStore(store)
            expectIntact(disk, except: [], "zero tail")
            #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
            #expect(try Damage.size(segment) == records, "the zeros were not cut off")
            try disk.setObject(Data("new".utf8), forKey: "new")
        }
        let again = try openDataStore(store)
        #expect(again.recoveryIssues.isEmpty)
        #expect(again.allKeys.count == 21)
    }

    @Test("zeros over the last records (same file size) lose only those records")
    func zeroedLastRecords() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let segment = try smallStore(store)
        try Damage.zero(segment, last: 40) // a record here is ~35 bytes: the last one or two
        let disk = try openDataStore(store)
        expectIntact(disk, except: [18, 19], "zeroed records")
        #expect(disk.allKeys.count >= 18)
        #expect(!disk.recoveryIssues.isEmpty)
    }

    // Contract 7: a damaged record in the middle loses itself; replay resyncs on the next record.
    @Test("a flipped byte in a middle record loses that record only; later records are kept")
    func flippedMiddleRecord() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let segment = try smallStore(store)
        let size = try Damage.size(segment)
        try Damage.flip(segment, at: SegmentFormat.headerLength + (size - SegmentFormat.headerLength) / 2)
        let disk = try openDataStore(store)
        #expect(disk.allKeys.count == 19)
        let lost = Set((0..<20).filter { !disk.allKeys.contains("k\($0)") })
        #expect(lost.count == 1 && !lost.contains(19))
        expectIntact(disk, except: lost, "middle flip")
        #expect(disk.recoveryIssues.count == 1)
        #expect(disk.recoveryIssues.first?.description.contains("damaged") == true)
    }

    @Test("a flipped byte in either segment header copy loses nothing")
    func flippedHeaderByte() throws {
        for offset in [0, 9, 20, 40, 63] {
            let directory = TemporaryDirectory()
            let store = directory.storePath()
            let segment = try smallStore(store)
            try Damage.flip(segment, at: offset)
            let disk = try openDataStore(store)
            expectIntact(disk, except: [], "header byte \(offset)")
            #expect(disk.allKeys.count == 20)
        }
    }

    // The key directory only saves work: a damaged one is reported and the segments replayed whole.
    @Test("a flipped byte in the key directory is reported and every value is still read from the segments")
    func flippedSnapshotByte() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try fill(store)
        let snapshot = store + "/" + StoreFolder.directoryName
        var random = SeededGenerator(seed: 5)
        try Damage.flip(snapshot, at: random.below(try Damage.size(snapshot)))
        let disk = try openDataStore(store)
        #expect(disk.recoveryIssues.contains { $0.description.contains("key directory") })
        #expect(readAll(disk, context: "key directory flip") == Self.allKeys.count)
    }

    @Test("a snapshot that names a missing segment or a longer one is ignored; the segments are replayed")
    func mismatchedSnapshot() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try fill(store)
        let segment = store + "/" + (try StoreFiles(store).segments.last!)
        // The segment lost its last record after the snapshot was written: the snapshot is ahead of it.
        let tail = try Damage.bytes(segment).suffix(300)
        try Damage.cut(segment, last: 300)
        try Damage.append(Array(tail.prefix(100)), to: segment)
        let disk = try openDataStore(store)
        #expect(!disk.recoveryIssues.isEmpty)
        // Lost: the records in the cut (the three large values' and the last small one's), nothing else.
        #expect(readAll(disk, context: "snapshot ahead of its segment") >= Self.allKeys.count - 5)
    }

    // Contract 7 and 9: values in files of their own are verified on read.
    @Test("a same-size edit, a truncation or removal of a value file is corrupted for that key only")
    func valueFileDamage() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        _ = try smallStore(store, valuesAsFiles: true)
        let disk = try openDataStore(store, valuesAsFiles: true)
        let paths = try (0..<3).map { try #require(try disk.entry(forKey: "k\($0)").filePath) }
        try Damage.flip(paths[0], at: 2)
        try Damage.cut(paths[1], last: 1)
        try FileManager.default.removeItem(atPath: paths[2])
        for index in 0..<3 {
            #expect(storageError { _ = try disk.object(forKey: "k\(index)") }?.isCorrupted == true, "k\(index)")
        }
        expectIntact(disk, except: [0, 1, 2], "value files")
        #expect(try openDataStore(store, valuesAsFiles: true).allKeys.count == 17)
    }

    // Contract 6: a crash inside `SegmentFile.create` (between creating the file and writing its header)
    // leaves an empty segment file; the store must still open and roll to new segments.
    @Test("an empty segment file left by a crash while creating it does not stop the store", arguments: [1, 2])
    func emptySegmentFromCrashedCreate(id: UInt32) throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        if id == 1 {
            // A new store: the marker is written, the first segment created empty.
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            try Damage.write(Array(StoreFolder.markerText(storeID: 42).utf8), to: store + "/" + StoreFolder.markerName)
        } else {
            try openDataStore(store).setObject(Data("kept".utf8), forKey: "kept")
        }
        try Damage.write([], to: store + "/" + SegmentFile.name(of: id))
        let disk = try openDataStore(store)
        #expect(disk.allKeys == (id == 1 ? [] : ["kept"]))
        try disk.setObject(Data("new".utf8), forKey: "new")
        try disk.removeAll() // starts a new segment
        try disk.setObject(Data("after".utf8), forKey: "after")
        #expect(try openDataStore(store).object(forKey: "after") == Data("after".utf8))
    }
}
