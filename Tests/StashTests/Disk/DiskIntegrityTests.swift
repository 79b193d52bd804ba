import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract items 6–9: crash consistency, bad data, hostile keys, value files as the transformer's bytes.
@Suite("Disk integrity")
struct DiskIntegrityTests {
    /// With `valuesAsFiles`, every value is a file of its own (the tests that look at value files).
    private func makeDisk(_ directory: TemporaryDirectory, valuesAsFiles: Bool = false) throws -> DiskStorage<Data> {
        var config = directory.diskConfig()
        config.storesValuesAsFiles = valuesAsFiles
        return try DiskStorage(config: config, transformer: TransformerFactory.forData(), now: TestClock().function)
    }

    /// The store's last (active) segment.
    private func segmentPath(_ directory: TemporaryDirectory) throws -> String {
        directory.storePath() + "/" + (try #require(try StoreFiles(directory.storePath()).segments.last))
    }

    // Contract 6: a value written and returned from setObject is read back by a new instance.
    @Test("a written value is read back after a reopen")
    func writtenValueSurvivesReopen() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("hello".utf8), forKey: "k")
        #expect(try makeDisk(directory).object(forKey: "k") == Data("hello".utf8))
    }

    // Contract 6: a crash after the new value file was written but before its record leaves the
    // old value (the new file is an unreferenced orphan, removed at the next open).
    @Test("a crash between writing a value file and its record leaves the old value; the orphan is removed")
    func crashBeforeRecordKeepsOldValue() throws {
        let directory = TemporaryDirectory()
        do {
            let disk = try makeDisk(directory, valuesAsFiles: true)
            try disk.setObject(Data("old".utf8), forKey: "k")
        }
        // What the interrupted write of "new" left: a file under the next number, no record.
        let orphan = directory.storePath() + "/" + ValueFiles.name(of: 99)
        try Data("new, partly writ".utf8).write(to: URL(fileURLWithPath: orphan))
        let reopened = try makeDisk(directory, valuesAsFiles: true)
        #expect(try reopened.object(forKey: "k") == Data("old".utf8))
        #expect(!FileManager.default.fileExists(atPath: orphan))
        try reopened.setObject(Data("newer".utf8), forKey: "k")
        #expect(try makeDisk(directory).object(forKey: "k") == Data("newer".utf8))
    }

    // Contract 6: a torn last record is tolerated; earlier records are kept.
    @Test("a torn last segment record is cut off and earlier values remain")
    func tornSegmentTailIsTolerated() throws {
        let directory = TemporaryDirectory()
        do {
            let disk = try makeDisk(directory)
            try disk.setObject(Data("a".utf8), forKey: "a")
            try disk.setObject(Data("b".utf8), forKey: "b")
        }
        let segment = try FileHandle(forUpdating: URL(fileURLWithPath: try segmentPath(directory)))
        let length = try segment.seekToEnd()
        try segment.truncate(atOffset: length - 5) // tear the record of "b"
        try segment.close()

        do {
            let reopened = try makeDisk(directory)
            #expect(try reopened.object(forKey: "a") == Data("a".utf8))
            #expect(storageError { _ = try reopened.object(forKey: "b") }?.isNotFound == true)
            #expect(reopened.recoveryIssues.count == 1)
            try reopened.setObject(Data("c".utf8), forKey: "c") // appends after the cut, not after garbage
        }
        let again = try makeDisk(directory)
        #expect(Set(again.allKeys) == ["a", "c"])
        #expect(again.recoveryIssues.isEmpty)
    }

    // Contract 7: garbage after a segment's valid records is reported and cut off.
    @Test("garbage appended to the segment is reported and dropped")
    func garbageAfterSegmentIsDropped() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("a".utf8), forKey: "a")
        let segment = try FileHandle(forWritingTo: URL(fileURLWithPath: try segmentPath(directory)))
        try segment.seekToEnd()
        try segment.write(contentsOf: Data([0x10, 0, 0, 0] + Array(repeating: 0xAB, count: 40)))
        try segment.close()
        let reopened = try makeDisk(directory)
        #expect(reopened.allKeys == ["a"])
        #expect(reopened.recoveryIssues.first?.isCorrupted == true)
    }

    // Contract 7: a segment whose header is not Stash's loses its records, reported; the store works.
    @Test("a segment with a foreign header gives an empty, working store and removes orphaned values")
    func foreignSegmentHeader() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory, valuesAsFiles: true).setObject(Data("a".utf8), forKey: "a")
        try Data("not a segment".utf8).write(to: URL(fileURLWithPath: try segmentPath(directory)))
        let reopened = try makeDisk(directory)
        #expect(reopened.allKeys.isEmpty)
        #expect(reopened.recoveryIssues.count == 1)
        #expect(try StoreFiles(directory.storePath()).values.isEmpty)
        try reopened.setObject(Data("b".utf8), forKey: "b")
        #expect(try makeDisk(directory).object(forKey: "b") == Data("b".utf8))
    }

    // Contract 7: a truncated value file is a clear error; the entry is dropped, the rest works.
    @Test("a truncated value file throws corrupted, is dropped, and other keys still work",
          arguments: [0, 3])
    func truncatedValueFile(keptBytes: Int) throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, valuesAsFiles: true)
        try disk.setObject(Data("0123456789".utf8), forKey: "bad")
        try disk.setObject(Data("good".utf8), forKey: "good")
        let path = try #require(try disk.entry(forKey: "bad").filePath)
        try Data("0123456789".utf8).prefix(keptBytes).write(to: URL(fileURLWithPath: path))

        #expect(storageError { _ = try disk.object(forKey: "bad") }?.isCorrupted == true)
        #expect(storageError { _ = try disk.object(forKey: "bad") }?.isNotFound == true)
        #expect(try disk.object(forKey: "good") == Data("good".utf8))
        #expect(try makeDisk(directory).allKeys == ["good"]) // the drop was recorded
    }

    // Contract 7: a missing value file, or a directory in its place, is a clear error.
    @Test("a missing value file or a directory in its place throws corrupted and drops the entry")
    func missingOrReplacedValueFile() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, valuesAsFiles: true)
        try disk.setObject(Data("x".utf8), forKey: "gone")
        try disk.setObject(Data("y".utf8), forKey: "dir")
        try FileManager.default.removeItem(atPath: try #require(try disk.entry(forKey: "gone").filePath))
        let dirPath = try #require(try disk.entry(forKey: "dir").filePath)
        try FileManager.default.removeItem(atPath: dirPath)
        try FileManager.default.createDirectory(atPath: dirPath, withIntermediateDirectories: false)

        #expect(storageError { _ = try disk.object(forKey: "gone") }?.isCorrupted == true)
        #expect(storageError { _ = try disk.object(forKey: "dir") } != nil)
        #expect(!disk.existsObject(forKey: "gone"))
        try disk.setObject(Data("z".utf8), forKey: "dir")
        #expect(try disk.object(forKey: "dir") == Data("z".utf8))
    }

    // Contract 7: a value that no longer decodes (the model changed) is a decoding error; its intact bytes are kept.
    @Test("a value that no longer decodes throws decodingFailed and is kept for the old type; others still work")
    func undecodableValueIsKept() throws {
        struct UserV2: Codable, Sendable { var name: String; var email: String }
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "old")
        let v2 = storage.transformCodable(ofType: UserV2.self)
        try v2.setObject(UserV2(name: "b", email: "b@example.com"), forKey: "new")

        let fresh = try Storage<UserV2>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: UserV2.self))
        #expect(storageError { _ = try fresh.object(forKey: "old") }?.isDecodingFailed == true)
        #expect(storageError { _ = try fresh.object(forKey: "old") }?.isDecodingFailed == true) // still there
        #expect(try fresh.object(forKey: "new").email == "b@example.com")
        #expect(try fresh.transformCodable(ofType: User.self).object(forKey: "old") == User(name: "a", age: 1))
        #expect(Set(fresh.allKeys) == ["old", "new"])
    }

    // Contract 8: hostile keys map to files inside the directory and round-trip, also after a restart.
    @Test("any key stays inside the store folder and round-trips", arguments: [
        "", "/", "..", "../../etc/passwd", "/absolute/path", "a/b/../c", "\\windows\\path", "ключ 🔑 キー",
        "line\nbreak\ttab", String(repeating: "x", count: 10_240), ".", "~", "$HOME", "*?[]", "CON", "journal", "lock",
        "stash-store", "index.snapshot", "key-directory", "00000001.segment", "0000000000000001.value",
    ])
    func hostileKeysStayInside(key: String) throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, valuesAsFiles: true) // a file per value: its path is checked
        try disk.setObject(Data(key.utf8), forKey: key)
        let path = try #require(try disk.entry(forKey: key).filePath)
        #expect((path as NSString).deletingLastPathComponent == disk.path)
        #expect(DiskStore.isValueFileName((path as NSString).lastPathComponent))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["store"])

        let reopened = try makeDisk(directory)
        #expect(reopened.allKeys == [key])
        #expect(try reopened.object(forKey: key) == Data(key.utf8))
        try reopened.removeObject(forKey: key)
        #expect(reopened.allKeys.isEmpty)
    }

    // Contract 8, for the store's own name: it names a folder inside `directory`, or nothing is opened.
    @Test("a store name that would leave the directory is rejected with invalidName and creates nothing", arguments: [
        "", ".", "./", "/", "..", "../outside", "a/../../outside", "/absolute/store", "nul\u{0}byte",
    ])
    func storeNameOutsideDirectoryIsRejected(name: String) throws {
        let directory = TemporaryDirectory()
        let parent = directory.url.appendingPathComponent("parent", isDirectory: true)
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let config = DiskConfig(name: name, directory: parent)
        let error = storageError { _ = try DiskStorage(config: config, transformer: TransformerFactory.forData()) }
        guard case .invalidName(let rejected)? = error else {
            Issue.record("expected invalidName, got \(String(describing: error))")
            return
        }
        #expect(rejected == name)
        #expect(storageError { _ = try Storage(diskConfig: config, transformer: TransformerFactory.forData()) } != nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["parent"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: parent.path).isEmpty)
    }

    @Test("a store name with several components opens a nested folder inside the directory")
    func nestedStoreName() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig("MyApp/./Images"), transformer: TransformerFactory.forData())
        try disk.setObject(Data("png".utf8), forKey: "logo")
        #expect(disk.path == directory.url.appendingPathComponent("MyApp/Images").resolvingSymlinksInPath().path)
        #expect(try disk.object(forKey: "logo") == Data("png".utf8))
    }

    // Contract 8: a key too long for a journal record is refused up front, not lost at the next open.
    @Test("a key over 1 MiB is rejected with keyTooLong and the store is unchanged")
    func overlongKeyIsRejected() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        try disk.setObject(Data("a".utf8), forKey: "a")
        let key = String(repeating: "k", count: DiskStore.maxKeyLength + 1)
        guard case .keyTooLong? = storageError({ try disk.setObject(Data("b".utf8), forKey: key) }) else {
            Issue.record("expected keyTooLong")
            return
        }
        #expect(disk.allKeys == ["a"])
        let longest = String(repeating: "k", count: DiskStore.maxKeyLength)
        try disk.setObject(Data("c".utf8), forKey: longest)
        #expect(Set(try makeDisk(directory).allKeys) == ["a", longest])
    }

    // Contract 8: allKeys lists what is on disk after a restart, without reading value files.
    @Test("allKeys lists every stored key after a restart")
    func allKeysAfterRestart() throws {
        let directory = TemporaryDirectory()
        let keys = Set((0..<50).map { "key-\($0)" })
        do {
            let disk = try makeDisk(directory)
            for key in keys { try disk.setObject(Data(key.utf8), forKey: key) }
            try disk.removeObject(forKey: "key-7")
        }
        #expect(Set(try makeDisk(directory).allKeys) == keys.subtracting(["key-7"]))
    }

    // Contract 9: the value file holds exactly the transformer's bytes.
    @Test("the file at filePath holds exactly the transformer's bytes")
    func valueFileIsTransformerBytes() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, valuesAsFiles: true)
        let user = User(name: "Ada", age: 36)
        try storage.setObject(user, forKey: "me")
        let path = try #require(try storage.entry(forKey: "me").filePath)
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(try JSONDecoder().decode(User.self, from: onDisk) == user) // JSONEncoder's key order varies
        let transformer = Transformer<User>(toData: { Data("\($0.name)|\($0.age)".utf8) }, fromData: { _ in user })
        let custom = storage.transform(transformer: transformer)
        try custom.setObject(user, forKey: "custom")
        #expect(try Data(contentsOf: URL(fileURLWithPath: #require(custom.entry(forKey: "custom").filePath))) == Data("Ada|36".utf8))
        let bytes = Data((0..<1000).map { UInt8($0 % 256) })
        try storage.transformData().setObject(bytes, forKey: "raw")
        #expect(try Data(contentsOf: URL(fileURLWithPath: #require(storage.transformData().entry(forKey: "raw").filePath))) == bytes)
    }

    // Contract 6: segments are compacted when most of their bytes are dead, and nothing is lost doing so.
    @Test("compaction keeps every live value and its LRU order", arguments: [false, true])
    func compactionKeepsValues(valuesAsFiles: Bool) throws {
        let directory = TemporaryDirectory()
        try withEngineThresholds(in: directory.path, compactionMinimum: 8 << 10) {
            let disk = try makeDisk(directory, valuesAsFiles: valuesAsFiles)
            for round in 0..<30 {
                for key in 0..<40 { try disk.setObject(Data("\(round)-\(key)".utf8), forKey: "k\(key)") }
                _ = try disk.object(forKey: "k\(round % 40)") // reads move keys in the LRU order
            }
            // Settled, not just waited for: a compaction that copied while the loop went on writing
            // left dead bytes behind it (under load, 30,095 bytes of segments once).
            disk.settleCompaction()
            // Records, not file lengths: the segment appended to has room reserved past its records.
            let segmentBytes = try StoreFiles(directory.storePath()).segments
                .reduce(0) { $0 + (try Damage.recordsEnd(directory.storePath() + "/" + $1)) }
            #expect(segmentBytes < 30_000, "1,200 records of 30-70 bytes were written; compaction keeps about 40")
            let order = disk.entryInfos.map(\.key)
            let reopened = try makeDisk(directory, valuesAsFiles: valuesAsFiles)
            #expect(reopened.entryInfos.map(\.key) == order)
            for key in 0..<40 { #expect(try reopened.object(forKey: "k\(key)") == Data("29-\(key)".utf8)) }
            #expect(try StoreFiles(directory.storePath()).values.count == (valuesAsFiles ? 40 : 0))
        }
    }

    // Contract 7 (power-loss style damage): files that are not Stash's, in the store folder, are
    // neither read as values nor deleted, through reopening, writing, compaction and removeAll.
    @Test("unknown files and folders in the store folder are ignored and left alone")
    func unknownFilesAreLeftAlone() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("kept".utf8), forKey: "kept")
        let store = directory.storePath()
        let strangers = ["notes.txt", "journal.bak", "0123.4", ".hidden", "journal", "segment", "1.segment", "index.snapshot.bak"]
        for name in strangers { try Data("not stash's".utf8).write(to: URL(fileURLWithPath: store + "/" + name)) }
        try FileManager.default.createDirectory(atPath: store + "/folder", withIntermediateDirectories: false)

        let disk = try makeDisk(directory)
        #expect(disk.allKeys == ["kept"])
        #expect(disk.recoveryIssues.isEmpty)
        #expect(try disk.object(forKey: "kept") == Data("kept".utf8))
        try withEngineThresholds(in: directory.path, compactionMinimum: 4 << 10) {
            for round in 0..<1100 { try disk.setObject(Data("\(round)".utf8), forKey: "k\(round % 3)") } // compacts and sweeps
            disk.waitForCompaction()
            try disk.compactNow()
        }
        try disk.removeAll()
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: store))
        #expect(left.isSuperset(of: strangers + ["folder"]))
    }
}
