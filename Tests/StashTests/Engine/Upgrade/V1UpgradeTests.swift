import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Issue #16 "A v1 store is upgraded on open, or opened empty with a recovery issue — never misread,
/// never a crash": stores in the first disk format (a `journal` of CRC-checked records and one file per
/// value named `<32 hex of the key's hash>.<hex generation>`), built byte for byte as the v1 code wrote them.
@Suite("Version-1 store upgrade")
struct V1UpgradeTests {
    /// A version-1 store under construction: journal records and value files.
    private struct V1Store {
        let path: String
        var journal = JournalFormat.magic
        var generation: UInt64 = 0

        init(_ path: String) throws {
            self.path = path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        /// Writes `value`'s file and its set record; returns the file's path.
        @discardableResult
        mutating func set(_ key: String, _ value: Data, expiry: Double = Date.distantFuture.timeIntervalSince1970,
                          time: Double) throws -> String {
            generation += 1
            let file = path + "/" + DiskStore.version1FileName(forKey: key, generation: generation)
            try value.write(to: URL(fileURLWithPath: file))
            JournalFormat.append(.set(key: key, V1Record(generation: generation, size: value.count, expiry: expiry, lastAccess: time)),
                                 to: &journal)
            return file
        }

        mutating func record(_ record: JournalRecord) { JournalFormat.append(record, to: &journal) }

        func close() throws {
            try Data(journal).write(to: URL(fileURLWithPath: path + "/journal"))
            _ = FileManager.default.createFile(atPath: path + "/lock", contents: nil)
        }
    }

    private static let large = Data((0..<(300 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A v1 store holding a, b, c (expiring), the large value, "café" and a removed and a cleared key;
    /// least recently used first: c, large, café, b, a.
    private func buildStore(_ path: String) throws -> V1Store {
        var store = try V1Store(path)
        let gone = try store.set("gone", Data("old".utf8), time: 1)
        store.record(.clear)
        try FileManager.default.removeItem(atPath: gone) // v1 removed cleared files
        try store.set("a", Data("value a".utf8), time: 10)
        try store.set("b", Data("value b".utf8), time: 11)
        try store.set("c", Data("value c".utf8), expiry: 1_800_000_100, time: 12)
        try store.set("large", Self.large, time: 13)
        try store.set("caf\u{E9}", Data("café".utf8), time: 14)
        let removed = try store.set("removed", Data("x".utf8), time: 15)
        store.record(.remove(key: "removed"))
        try FileManager.default.removeItem(atPath: removed)
        store.record(.access(key: "b", time: 20))
        store.record(.access(key: "a", time: 21))
        try store.close()
        return store
    }

    private func expectUpgraded(_ disk: DiskStorage<Data>) throws {
        #expect(try disk.object(forKey: "a") == Data("value a".utf8))
        #expect(try disk.object(forKey: "b") == Data("value b".utf8))
        #expect(try disk.object(forKey: "large") == Self.large)
        #expect(try disk.object(forKey: "cafe\u{301}") == Data("café".utf8)) // canonically equivalent key
        #expect(storageError { _ = try disk.object(forKey: "removed") }?.isNotFound == true)
        #expect(storageError { _ = try disk.object(forKey: "gone") }?.isNotFound == true)
    }

    // Contract item 1 through the upgrade: the journal holds seconds since 1970; a fractional one
    // becomes the very date `Date(timeIntervalSince1970:)` makes of it, and stays it after a reopen.
    @Test("a fractional expiry of a version-1 store is the same date after the upgrade and after a reopen")
    func fractionalExpiryThroughUpgrade() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store = try V1Store(path)
        try store.set("f", Data("fraction".utf8), expiry: 1_800_000_000.1, time: 1_799_999_999.9)
        try store.close()
        let expected = Expiry.date(Date(timeIntervalSince1970: 1_800_000_000.1))
        let clock = TestClock(Self.now)
        do {
            let disk = try openDataStore(path, now: clock.function)
            #expect(disk.entryInfos.first?.lastAccess == Date(timeIntervalSince1970: 1_799_999_999.9)) // before a read moves it
            #expect(try disk.entry(forKey: "f").expiry == expected)
        }
        #expect(try openDataStore(path, now: clock.function).entry(forKey: "f").expiry == expected)
    }

    @Test("a version-1 store is upgraded on open: values, expiry and LRU order are kept, the v1 files are gone")
    func upgradeKeepsEverything() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        _ = try buildStore(path)
        let clock = TestClock(Self.now)
        do {
            let disk = try openDataStore(path, now: clock.function)
            #expect(disk.recoveryIssues.isEmpty)
            #expect(disk.entryInfos.map(\.key) == ["c", "large", "caf\u{E9}", "b", "a"])
            let c = try #require(disk.entryInfos.first { $0.key == "c" })
            #expect(c.expiry == .date(Date(timeIntervalSince1970: 1_800_000_100)))
            #expect(try disk.object(forKey: "c") == Data("value c".utf8))
            clock.advance(by: 200)
            #expect(storageError { _ = try disk.object(forKey: "c") }?.isExpired == true)
            try expectUpgraded(disk)
            #expect(disk.entryInfos.first { $0.key == "large" }?.filePath != nil, "a large value is a file of its own")
            #expect(disk.entryInfos.first { $0.key == "a" }?.filePath == nil, "a small value is packed")
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: path)
        #expect(!names.contains("journal"))
        #expect(!names.contains { DiskStore.isVersion1FileName($0) }, "v1 value files left: \(names)")
        #expect(names.contains(StoreFolder.markerName))
        // And it stays a version-2 store.
        let again = try openDataStore(path, now: clock.function)
        try expectUpgraded(again)
        #expect(again.recoveryIssues.isEmpty)
    }

    @Test("a version-1 store cannot be opened read-only (it would have to be rewritten); nothing changes")
    func readOnlyOpenOfV1Throws() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        _ = try buildStore(path)
        let before = try folderContents(path)
        #expect(throws: (any Error).self) { _ = try openDataStore(path, readOnly: true) }
        #expect(try folderContents(path) == before)
    }

    // Contract 7: damage in the v1 journal loses the records it touches, is reported, never misread.
    @Test("a damaged version-1 journal gives a recovery issue, only intact values, and a working store",
          arguments: Array(stride(from: 8, to: 400, by: 23)))
    func damagedJournal(offset: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try buildStore(path)
        var journal = store.journal
        guard offset < journal.count else { return }
        journal[offset] ^= 0x41
        try Data(journal).write(to: URL(fileURLWithPath: path + "/journal"))
        let disk = try openDataStore(path)
        #expect(!disk.recoveryIssues.isEmpty, "a flip at journal byte \(offset) was not reported")
        let expected = ["a": Data("value a".utf8), "b": Data("value b".utf8), "c": Data("value c".utf8),
                        "large": Self.large, "caf\u{E9}": Data("café".utf8)]
        for key in disk.allKeys {
            // A key that survived reads its exact value (or, if its file went, is reported missing).
            if let value = try? disk.object(forKey: key) { #expect(expected[key] == value, "\(key) misread") }
        }
        try disk.setObject(Data("new".utf8), forKey: "new")
        #expect(try openDataStore(path).object(forKey: "new") == Data("new".utf8))
    }

    @Test("a missing, short or edited version-1 value file gives a recovery issue and loses that value only")
    func damagedValueFiles() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        _ = try buildStore(path)
        let files = try FileManager.default.contentsOfDirectory(atPath: path).filter(DiskStore.isVersion1FileName)
        let named = { (key: String) in files.first { $0.hasPrefix(String(DiskStore.version1FileName(forKey: key, generation: 0).prefix(32))) }! }
        try FileManager.default.removeItem(atPath: path + "/" + named("a"))
        try Damage.cut(path + "/" + named("b"), last: 2)
        try Damage.write(try Damage.bytes(path + "/" + named("large")) + [1], to: path + "/" + named("large"))
        let disk = try openDataStore(path)
        #expect(!disk.recoveryIssues.isEmpty)
        for key in ["a", "b", "large"] {
            let error = storageError { _ = try disk.object(forKey: key) }
            #expect(error?.isNotFound == true || error?.isCorrupted == true, "\(key)")
        }
        #expect(try disk.object(forKey: "c") == Data("value c".utf8))
        #expect(try disk.object(forKey: "caf\u{E9}") == Data("café".utf8))
    }

    @Test("an upgrade cut short (v2 files beside the journal, no marker) is started over from the journal")
    func interruptedUpgradeStartsOver() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        _ = try buildStore(path)
        // What a crash in the middle of an upgrade leaves: a half-written segment and value file.
        try Damage.write(SegmentFormat.header(.init(id: 1, salt: 99, flags: 0, store: 1, floor: 0)) + [1, 2, 3], to: path + "/" + SegmentFile.name(of: 1))
        try Damage.write([9, 9, 9], to: path + "/" + ValueFiles.name(of: 1))
        let disk = try openDataStore(path)
        try expectUpgraded(disk)
        #expect(disk.allKeys.count == 5)
    }

    @Test("a journal without the v1 magic makes the folder a foreign one: refused, nothing changed")
    func foreignJournalIsNotAStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Data("my own journal, not Stash's".utf8).write(to: URL(fileURLWithPath: path + "/journal"))
        let before = try folderContents(path)
        guard case .notAStore? = storageError({ _ = try openDataStore(path) }) else {
            Issue.record("expected notAStore")
            return
        }
        #expect(try folderContents(path) == before)
    }
}
