import Foundation
import Testing
@testable import Stash

/// Contract items 6–9: crash consistency, bad data, hostile keys, value files as the transformer's bytes.
@Suite("Disk integrity")
struct DiskIntegrityTests {
    private func makeDisk(_ directory: TemporaryDirectory) throws -> DiskStorage<Data> {
        try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData(), now: TestClock().function)
    }

    private func journalPath(_ directory: TemporaryDirectory) -> String { directory.storePath() + "/journal" }

    // Contract 6: a value written and returned from setObject is read back by a new instance.
    @Test("a written value is read back after a reopen")
    func writtenValueSurvivesReopen() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("hello".utf8), forKey: "k")
        #expect(try makeDisk(directory).object(forKey: "k") == Data("hello".utf8))
    }

    // Contract 6: a crash after the new value file was written but before its journal record
    // leaves the old value (the new file is an unreferenced orphan).
    @Test("a crash between writing a value file and its journal record leaves the old value")
    func crashBeforeJournalRecordKeepsOldValue() throws {
        let directory = TemporaryDirectory()
        var oldPath = ""
        do {
            let disk = try makeDisk(directory)
            try disk.setObject(Data("old".utf8), forKey: "k")
            oldPath = try disk.entry(forKey: "k").filePath ?? ""
        }
        // What the interrupted write of "new" left: a file with the next generation, no record.
        let orphan = (oldPath as NSString).deletingPathExtension + ".99"
        try Data("new, partly writ".utf8).write(to: URL(fileURLWithPath: orphan))
        let reopened = try makeDisk(directory)
        #expect(try reopened.object(forKey: "k") == Data("old".utf8))
        try reopened.setObject(Data("newer".utf8), forKey: "k")
        #expect(try makeDisk(directory).object(forKey: "k") == Data("newer".utf8))
    }

    // Contract 6: a torn last journal record is tolerated; earlier records are kept.
    @Test("a torn last journal record is cut off and earlier values remain")
    func tornJournalTailIsTolerated() throws {
        let directory = TemporaryDirectory()
        do {
            let disk = try makeDisk(directory)
            try disk.setObject(Data("a".utf8), forKey: "a")
            try disk.setObject(Data("b".utf8), forKey: "b")
        }
        let journal = try FileHandle(forUpdating: URL(fileURLWithPath: journalPath(directory)))
        let length = try journal.seekToEnd()
        try journal.truncate(atOffset: length - 5) // tear the record of "b"
        try journal.close()

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

    // Contract 7: garbage after the journal's valid records drops only what follows it.
    @Test("garbage appended to the journal is reported and dropped")
    func garbageAfterJournalIsDropped() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("a".utf8), forKey: "a")
        let journal = try FileHandle(forWritingTo: URL(fileURLWithPath: journalPath(directory)))
        try journal.seekToEnd()
        try journal.write(contentsOf: Data([0x10, 0, 0, 0] + Array(repeating: 0xAB, count: 40)))
        try journal.close()
        let reopened = try makeDisk(directory)
        #expect(reopened.allKeys == ["a"])
        #expect(reopened.recoveryIssues.first?.isCorrupted == true)
    }

    // Contract 7: a journal that is not Stash's at all gives an empty, working store.
    @Test("a journal with a foreign header gives an empty, working store and removes orphaned values")
    func foreignJournalHeader() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("a".utf8), forKey: "a")
        try Data("not a journal".utf8).write(to: URL(fileURLWithPath: journalPath(directory)))
        let reopened = try makeDisk(directory)
        #expect(reopened.allKeys.isEmpty)
        #expect(reopened.recoveryIssues.count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.storePath()).filter(DiskStore.isValueFileName).isEmpty)
        try reopened.setObject(Data("b".utf8), forKey: "b")
        #expect(try makeDisk(directory).object(forKey: "b") == Data("b".utf8))
    }

    // Contract 7: a truncated value file is a clear error; the entry is dropped, the rest works.
    @Test("a truncated value file throws corrupted, is dropped, and other keys still work",
          arguments: [0, 3])
    func truncatedValueFile(keptBytes: Int) throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        try disk.setObject(Data("0123456789".utf8), forKey: "bad")
        try disk.setObject(Data("good".utf8), forKey: "good")
        let path = try #require(try disk.entry(forKey: "bad").filePath)
        try Data("0123456789".utf8).prefix(keptBytes).write(to: URL(fileURLWithPath: path))

        #expect(storageError { _ = try disk.object(forKey: "bad") }?.isCorrupted == true)
        #expect(storageError { _ = try disk.object(forKey: "bad") }?.isNotFound == true)
        #expect(try disk.object(forKey: "good") == Data("good".utf8))
        #expect(try makeDisk(directory).allKeys == ["good"]) // the drop was journaled
    }

    // Contract 7: a missing value file, or a directory in its place, is a clear error.
    @Test("a missing value file or a directory in its place throws corrupted and drops the entry")
    func missingOrReplacedValueFile() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
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
    ])
    func hostileKeysStayInside(key: String) throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
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
        let storage = try makeUserStorage(in: directory)
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

    // Contract 6: the journal is compacted when it grows, and nothing is lost doing so.
    @Test("journal compaction keeps every live value and its LRU order")
    func compactionKeepsValues() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        for round in 0..<30 {
            for key in 0..<40 { try disk.setObject(Data("\(round)-\(key)".utf8), forKey: "k\(key)") }
        }
        let journalSize = try #require(try FileManager.default.attributesOfItem(atPath: journalPath(directory))[.size] as? Int)
        #expect(journalSize < 20_000) // 1,200 records of ~44 bytes were written; compaction kept ~240
        let order = disk.entryInfos.map(\.key)
        let reopened = try makeDisk(directory)
        #expect(reopened.entryInfos.map(\.key) == order)
        for key in 0..<40 { #expect(try reopened.object(forKey: "k\(key)") == Data("29-\(key)".utf8)) }
        let valueFiles = try FileManager.default.contentsOfDirectory(atPath: directory.storePath()).filter(DiskStore.isValueFileName)
        #expect(valueFiles.count == 40)
    }

    // Contract 7 (power-loss style damage): files that are not Stash's, in the store folder, are
    // neither read as values nor deleted, through reopening, writing, compaction and removeAll.
    @Test("unknown files and folders in the store folder are ignored and left alone")
    func unknownFilesAreLeftAlone() throws {
        let directory = TemporaryDirectory()
        try makeDisk(directory).setObject(Data("kept".utf8), forKey: "kept")
        let store = directory.storePath()
        let strangers = ["notes.txt", "journal.bak", "0123.4", ".hidden"]
        for name in strangers { try Data("not stash's".utf8).write(to: URL(fileURLWithPath: store + "/" + name)) }
        try FileManager.default.createDirectory(atPath: store + "/folder", withIntermediateDirectories: false)

        let disk = try makeDisk(directory)
        #expect(disk.allKeys == ["kept"])
        #expect(disk.recoveryIssues.isEmpty)
        #expect(try disk.object(forKey: "kept") == Data("kept".utf8))
        for round in 0..<1100 { try disk.setObject(Data("\(round)".utf8), forKey: "k\(round % 3)") } // compacts and sweeps
        try disk.removeAll()
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: store))
        #expect(left.isSuperset(of: strangers + ["folder"]))
    }
}
