import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Contract items 11 and 13 (issue #10 items 3 and 4): a folder Stash did not mark is never changed,
/// read-only opens create nothing, and a store can be read by another user or in a folder nobody may
/// write, while every write throws ``StorageError/readOnly(directory:)``.
@Suite("Foreign folders and read-only stores", .serialized)
struct ForeignFolderAndReadOnlyTests {
    // MARK: notAStore

    @Test("a non-empty folder that is not a store is refused with notAStore, and no file in it changes",
          arguments: [["notes.txt"], ["0123456789abcdef0123456789abcdef.1", "journal.bak"], ["00000001.segment"],
                      ["index.snapshot"], ["key-directory"], ["lock", "photo.png"], ["0000000000000001.value"]])
    func foreignFolderIsRefused(names: [String]) throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try FileManager.default.createDirectory(atPath: store + "/sub", withIntermediateDirectories: true)
        for name in names { try Data("the user's own \(name)".utf8).write(to: URL(fileURLWithPath: store + "/" + name)) }
        let before = try folderContents(store)
        for readOnly in [false, true] {
            let error = storageError { _ = try openDataStore(store, readOnly: readOnly) }
            guard case .notAStore(let refused)? = error else {
                Issue.record("readOnly \(readOnly): expected notAStore, got \(String(describing: error))")
                continue
            }
            #expect(refused.hasSuffix("/store"))
        }
        #expect(storageError { _ = try Storage(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData()) } != nil)
        #expect(try folderContents(store) == before)
    }

    @Test("an empty folder becomes a store: marked, and opened again as one")
    func emptyFolderBecomesStore() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
        try openDataStore(store).setObject(Data("v".utf8), forKey: "k")
        #expect(FileManager.default.fileExists(atPath: store + "/" + StoreFolder.markerName))
        #expect(try openDataStore(store).object(forKey: "k") == Data("v".utf8))
    }

    @Test("a missing folder opened read-only throws and creates nothing, not even its parents")
    func missingFolderReadOnly() throws {
        let directory = TemporaryDirectory()
        let store = directory.path + "/missing/parent/store"
        #expect(throws: (any Error).self) { _ = try openDataStore(store, readOnly: true) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }

    @Test("a store of a later format is refused with unsupportedFormat and left alone")
    func laterFormatIsRefused() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try openDataStore(store).setObject(Data("v".utf8), forKey: "k")
        try Data("Stash store, format 5\nid 0000000000000001\n".utf8).write(to: URL(fileURLWithPath: store + "/" + StoreFolder.markerName))
        let before = try folderContents(store)
        guard case .unsupportedFormat(_, let format)? = storageError({ _ = try openDataStore(store) }) else {
            Issue.record("expected unsupportedFormat")
            return
        }
        #expect(format == 5)
        #expect(try folderContents(store) == before)
    }

    // MARK: Read-only

    @Test("DiskConfig(readOnly: true): reads work, every write throws readOnly, and no file changes")
    func readOnlyConfig() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let clock = TestClock()
        do {
            let disk = try openDataStore(store, now: clock.function)
            try disk.setObject(Data("alpha".utf8), forKey: "a")
            try disk.setObject(Data("beta".utf8), forKey: "b", expiry: .seconds(10))
        }
        clock.advance(by: 100) // "b" expired: removeExpiredObjects has something to remove
        let before = try folderContents(store)
        let reader = try openDataStore(store, readOnly: true, now: clock.function)
        #expect(try reader.object(forKey: "a") == Data("alpha".utf8))
        #expect(Set(reader.allKeys) == ["a", "b"])
        #expect(reader.existsObject(forKey: "a"))
        let writes: [(String, () throws -> Void)] = [
            ("set", { try reader.setObject(Data("x".utf8), forKey: "c") }),
            ("remove", { try reader.removeObject(forKey: "a") }),
            ("removeAll", { try reader.removeAll() }),
            ("removeExpired", { try reader.removeExpiredObjects() }),
            ("trim", { try reader.trim(toSize: 0) }),
            ("repair", { _ = try reader.repair() }),
        ]
        for (name, write) in writes {
            guard case .readOnly? = storageError(write) else {
                Issue.record("\(name) on a read-only store did not throw readOnly")
                continue
            }
        }
        #expect(try reader.check().isClean)
        #expect(try reader.object(forKey: "a") == Data("alpha".utf8))
        #expect(try folderContents(store) == before, "a read-only store changed its folder")
    }

    @Test("a read-only Storage serves reads through memory and disk, and writes throw")
    func readOnlyStorage() throws {
        let directory = TemporaryDirectory()
        try makeUserStorage(in: directory).setObject(User(name: "Ada", age: 36), forKey: "me")
        var config = directory.diskConfig()
        config.readOnly = true
        let storage = try Storage<User>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: User.self))
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 36))
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 36)) // a memory hit now
        guard case .readOnly? = storageError({ try storage.setObject(User(name: "Bob", age: 1), forKey: "bob") }) else {
            Issue.record("expected readOnly")
            return
        }
        #expect(storageError { _ = try storage.object(forKey: "bob") }?.isNotFound == true)
    }

    // Issue #10 item 4: a store of another user, and a folder nobody may write, are readable.
    @Test("the stash CLI run as nobody reads root's store (no write access) and an a-w folder; writes fail saying so",
          .enabled(if: ReadOnlyHost.canRunAsNobody, "needs root, setpriv and a nobody user"))
    func readAsAnotherUser() throws {
        let directory = TemporaryDirectory()
        try #require(chmod(directory.path, 0o755) == 0)
        let store = directory.storePath()
        do {
            let disk = try openDataStore(store)
            try disk.setObject(Data("root's value".utf8), forKey: "k")
        }
        // Root's store: nobody may read but not write it.
        try #require(chmod(store, 0o755) == 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: store) { _ = chmod(store + "/" + name, 0o644) }
        try #require(isReachableByOthers(store), "nobody cannot reach \(store)")
        let before = try folderContents(store)
        var run = try ReadOnlyHost.stashAsNobody(["get", "k"], store: store)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stdout == Data("root's value".utf8))
        run = try ReadOnlyHost.stashAsNobody(["ls"], store: store)
        #expect(run.status == 0 && String(decoding: run.stdout, as: UTF8.self).contains("k"), "stderr: \(run.stderr)")
        run = try ReadOnlyHost.stashAsNobody(["check"], store: store)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        run = try ReadOnlyHost.stashAsNobody(["set", "k", "nobody's"], store: store)
        #expect(run.status == 1, "a write as nobody did not fail: \(run.stderr)")
        #expect(try folderContents(store) == before)

        // Nobody's own store, made read-only (a-w).
        let own = directory.storePath("own")
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: false)
        try #require(chown(own, ReadOnlyHost.nobody!.uid, ReadOnlyHost.nobody!.gid) == 0)
        #expect(try ReadOnlyHost.stashAsNobody(["set", "mine", "v"], store: own).status == 0)
        // chmod -R a-w: the folder and its files, as on a read-only file system.
        for name in try FileManager.default.contentsOfDirectory(atPath: own) { _ = chmod(own + "/" + name, 0o444) }
        try #require(chmod(own, 0o555) == 0)
        defer { _ = chmod(own, 0o755) }
        run = try ReadOnlyHost.stashAsNobody(["get", "mine"], store: own)
        #expect(run.status == 0 && run.stdout == Data("v".utf8), "stderr: \(run.stderr)")
        run = try ReadOnlyHost.stashAsNobody(["set", "other", "v"], store: own)
        #expect(run.status == 1)
    }
}

/// Running the built `stash`, as this user or as `nobody` (root and setpriv needed).
enum ReadOnlyHost {
    static let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].first { FileManager.default.isExecutableFile(atPath: $0) }
    static let nobody: (uid: uid_t, gid: gid_t)? = {
        guard let entry = getpwnam("nobody") else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()
    static let canRunAsNobody = geteuid() == 0 && setpriv != nil && nobody != nil

    typealias Run = ChildProcess.Run

    static func stashAsNobody(_ arguments: [String], store: String) throws -> Run {
        let stash = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
        let nobody = try #require(nobody)
        try #require(isReachableByOthers(stash.path), "nobody cannot run \(stash.path)")
        return try run(try #require(setpriv), ["--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups",
                                                stash.path, "--dir", store] + arguments)
    }

    /// Runs the built `stash --dir store` as this user.
    static func stash(_ arguments: [String], store: String) throws -> Run {
        let stash = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
        return try run(stash.path, ["--dir", store] + arguments)
    }

    private static func run(_ executable: String, _ arguments: [String]) throws -> Run {
        try ChildProcess.run(URL(fileURLWithPath: executable), arguments)
    }
}
