import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Contract items 11 and 13: a store acts only on its own files, through its own folder. Each test
// here reproduces a way the version-2 engine lost or resurrected data (round 3 of the outside attack).

@Suite("Store identity, the folder's lock, and the files a store trusts")
struct StoreIdentityTests {
    private static let now = Date(timeIntervalSince1970: 1_800_000_000)

    private static func set(_ store: DiskStore, _ key: String, _ data: Data) throws {
        let outcome = try store.writer.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false)
        outcome.replaced?.remove()
    }

    private static func get(_ store: DiskStore, _ key: String) throws -> Data {
        try store.read(key, now: now).data
    }

    // MARK: A folder made anew by another process

    @Test("a store whose folder another process made anew neither overwrites its files nor writes into it while that one has it open")
    func folderRecreatedByAnotherStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let first = try DiskStore(directory: path, readOnly: false)
        try Self.set(first, "mine", Data("of the first store".utf8))
        try FileManager.default.removeItem(atPath: path)
        // "Another process" (its own DiskStore, its own lock) makes a new store there.
        var second: DiskStore? = try DiskStore(directory: path, readOnly: false)
        let large = Data(repeating: 2, count: ValueFiles.threshold)
        try Self.set(second!, "theirs", large)
        try Self.set(second!, "small", Data("theirs".utf8))
        let before = try folderContents(path)

        // The first store notices its folder is gone: it must not write into the other store's.
        let refused = storageError { try Self.set(first, "mine", Data(repeating: 1, count: ValueFiles.threshold)) }
        guard case .inUse? = refused else {
            Issue.record("expected inUse while the other store holds the folder, got \(String(describing: refused))")
            return
        }
        #expect(try folderContents(path) == before, "the first store changed the other store's files")

        // Once the other store is closed, the first opens the folder anew, as a store of its own.
        second!.close()
        second = nil
        try Self.set(first, "mine", Data(repeating: 1, count: ValueFiles.threshold))
        #expect(try Self.get(first, "theirs") == large)
        #expect(try Self.get(first, "small") == Data("theirs".utf8))
        first.close()
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(reopened, "theirs") == large, "the other store's value was overwritten")
        #expect(try Self.get(reopened, "mine") == Data(repeating: 1, count: ValueFiles.threshold))
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    @Test("a value staged for a folder that was then made anew by another store is never written into it")
    func stagedValueNeverLandsInAnotherStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let first = try DiskStore(directory: path, readOnly: false)
        try Self.set(first, "a", Data("a".utf8))
        let oldFolder = first.log.values.handle
        try FileManager.default.removeItem(atPath: path)
        let second = try DiskStore(directory: path, readOnly: false)
        let theirs = Data(repeating: 7, count: ValueFiles.threshold)
        try Self.set(second, "theirs", theirs)
        // Staging through the old folder (what `DiskEngine.stage` does off the queue) fails: that folder is gone.
        #expect(throws: (any Error).self) { _ = try first.log.values.write(Data(repeating: 1, count: ValueFiles.threshold), durable: false) }
        #expect(oldFolder.isRemoved)
        #expect(try Self.get(second, "theirs") == theirs)
        #expect(try StoreFiles(path).values.count == 1)
    }

    // MARK: The lock

    @Test("deleting files in an open store's folder lets no second writer in")
    func deletedLockFileKeepsOthersOut() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let holder = try DiskStore(directory: path, readOnly: false)
        try Self.set(holder, "k", Data("v".utf8))
        // Version 2 locked a `lock` file, which anyone could delete.
        for name in try FileManager.default.contentsOfDirectory(atPath: path) where !name.hasSuffix(".segment") && name != StoreFolder.markerName {
            try FileManager.default.removeItem(atPath: path + "/" + name)
        }
        guard case .inUse? = storageError({ _ = try DiskStore(directory: path, readOnly: false) }) else {
            Issue.record("a second writer got in")
            return
        }
        guard case .inUse? = storageError({ _ = try DiskStore(directory: path, readOnly: true) }) else {
            Issue.record("a reader got in beside a writer it cannot follow (its stash-shared file deleted)")
            return
        }
    }

    @Test("a second writer process is kept out after the lock file of a live store is deleted")
    func deletedLockFileAcrossProcesses() throws {
        let folder = TemporaryDirectory()
        let holder = try ChildProcess(try #require(builtExecutable(named: "StashTorture")), ["hold", folder.storePath()],
                                      errorsIn: folder.url, holdInput: true)
        try #require(holder.waitForOutput(), "the holder did not start: \(holder.errors)")
        try? FileManager.default.removeItem(atPath: folder.storePath() + "/lock")
        let refusal = storageError { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) }
        guard case .inUse? = refusal else {
            Issue.record("expected inUse, got \(String(describing: refusal))")
            holder.closeInput()
            return
        }
        holder.closeInput()
        #expect(holder.wait(upTo: TestDeadline.long) && holder.status == 0)
    }

    // MARK: Open and close in one process

    @Test("opening a folder while another thread releases its last storage waits for the close instead of failing")
    func openRacingClose() throws {
        let directory = TemporaryDirectory()
        do {
            let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            for index in 0..<20_000 { try storage.setObject(Data("value \(index)".utf8), forKey: "key \(index)") }
        }
        for round in 0..<5 {
            let holder = Holder(try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData()))
            try holder.storage?.setObject(Data("round \(round)".utf8), forKey: "round") // a change: the close writes a snapshot
            let releasing = DispatchSemaphore(value: 0)
            // The last reference goes on another thread (its close takes a while) while this one opens.
            Thread {
                releasing.signal()
                holder.storage = nil
            }.start()
            releasing.wait()
            let opened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            #expect(try opened.object(forKey: "round") == Data("round \(round)".utf8))
        }
    }

    @Test("reopening right after removeAll of a store of many segments opens")
    func reopenAfterRemoveAll() throws {
        let directory = TemporaryDirectory()
        // Many small segments: the background deletion of the old ones is still running when the store reopens.
        try withEngineThresholds(in: directory.path, segmentLimit: 1 << 10) {
            for round in 0..<5 {
                do {
                    let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
                    for index in 0..<1_500 { try storage.setObject(Data(repeating: UInt8(index % 251), count: 500), forKey: "k\(index)") }
                    #expect(try StoreFiles(directory.storePath()).segments.count > 500)
                    try storage.removeAll()
                    try storage.setObject(Data("after \(round)".utf8), forKey: "after")
                }
                let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
                // Closing waited for the deletions: nothing superseded is left to report (a `stash check`
                // right after a `stash clear` once reported the old segments as damage).
                #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
                #expect(try StoreFiles(directory.storePath()).segments.count <= 2)
                #expect(reopened.allKeys == ["after"])
                #expect(try reopened.object(forKey: "after") == Data("after \(round)".utf8))
            }
        }
    }

    // MARK: Files that are not the store's, or not current

    @Test("a segment copied in from another store is ignored, reported and left alone; its keys never join")
    func foreignSegmentIsIgnored() throws {
        let directory = TemporaryDirectory()
        let mine = directory.storePath("mine")
        let other = directory.storePath("other")
        do {
            let store = try DiskStore(directory: mine, readOnly: false)
            for index in 0..<5 { try Self.set(store, "mine\(index)", Data("mine \(index)".utf8)) }
            store.close()
            let foreign = try DiskStore(directory: other, readOnly: false)
            try Self.set(foreign, "mine0", Data("theirs".utf8))
            try foreign.writer.removeAll() // a clear record and a floor: they must not wipe my store
            try Self.set(foreign, "theirs", Data("theirs".utf8))
            foreign.close()
        }
        let foreignSegment = try #require(try StoreFiles(other).segments.last)
        let planted = mine + "/" + SegmentFile.name(of: 40)
        try FileManager.default.copyItem(atPath: other + "/" + foreignSegment, toPath: planted)
        let plantedBytes = try Data(contentsOf: URL(fileURLWithPath: planted))

        let store = try DiskStore(directory: mine, readOnly: false)
        for index in 0..<5 { #expect(try Self.get(store, "mine\(index)") == Data("mine \(index)".utf8)) }
        #expect(storageError { _ = try Self.get(store, "theirs") }?.isNotFound == true, "a foreign key joined the store")
        #expect(store.recoveryIssues.contains { "\($0)".contains("another store") && "\($0)".contains("left alone") }, "\(store.recoveryIssues)")
        // Left alone, also by writes (a new segment gets a free number) and compaction.
        try Self.set(store, "new", Data("new".utf8))
        try store.compactNow()
        store.close()
        #expect(try Data(contentsOf: URL(fileURLWithPath: planted)) == plantedBytes)
        let disk = try openDataStore(mine)
        let report = try disk.check()
        #expect(report.problems.contains { $0.contains("another store") }, "stash check does not report it: \(report.problems)")
        #expect(Set(disk.allKeys) == Set((0..<5).map { "mine\($0)" } + ["new"]))
    }

    @Test("segments restored from a backup beside a compaction's output do not bring removed keys back")
    func restoredSegmentsAreSuperseded() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let backup = directory.path + "/backup"
        try FileManager.default.createDirectory(atPath: backup, withIntermediateDirectories: true)
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            try Self.set(store, "session", Data("logged in".utf8))
            try Self.set(store, "kept", Data("kept".utf8))
            for name in try StoreFiles(path).segments { try FileManager.default.copyItem(atPath: path + "/" + name, toPath: backup + "/" + name) }
            _ = try store.writer.remove("session") // logged out
            try store.compactNow()
            #expect(try !StoreFiles(path).segments.contains(SegmentFile.name(of: 1)))
            store.close()
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: backup) {
            try FileManager.default.copyItem(atPath: backup + "/" + name, toPath: path + "/" + name)
        }
        let store = try DiskStore(directory: path, readOnly: true)
        #expect(storageError { _ = try Self.get(store, "session") }?.isNotFound == true, "a logged-out session came back")
        #expect(try Self.get(store, "kept") == Data("kept".utf8))
        #expect(store.recoveryIssues.contains { "\($0)".contains("superseded") }, "\(store.recoveryIssues)")
    }

    @Test("a damaged marker takes its identity back from the store's segments, so nothing is lost")
    func damagedMarkerKeepsTheStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            try Self.set(store, "k", Data("v".utf8))
            store.close()
        }
        try Damage.write(Array("Stash store, format 3\nid zz\n".utf8), to: path + "/" + StoreFolder.markerName)
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(store, "k") == Data("v".utf8))
        #expect(store.recoveryIssues.contains { "\($0)".contains("marker") })
        store.close()
        let again = try DiskStore(directory: path, readOnly: false)
        #expect(again.recoveryIssues.isEmpty, "the marker was not rewritten: \(again.recoveryIssues)")
        #expect(try Self.get(again, "k") == Data("v".utf8))
    }

    @Test("a format-2 store opens: its segments stay its own, and a writer gives it an identity")
    func formatTwoStoreIsUpgraded() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try writeFormatTwoStore(path) // one segment whose record sets "old" to "v2!"

        let reader = try DiskStore(directory: path, readOnly: true)
        #expect(try Self.get(reader, "old") == Data("v2!".utf8))
        reader.close()
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(store, "old") == Data("v2!".utf8))
        try Self.set(store, "new", Data("v3".utf8))
        store.close()
        let marker = try String(contentsOfFile: path + "/" + StoreFolder.markerName, encoding: .utf8)
        #expect(marker.hasPrefix("Stash store, format 4\nid "))
        #expect(marker.contains("legacy 00000002"))
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(try Self.get(reopened, "old") == Data("v2!".utf8))
        #expect(try Self.get(reopened, "new") == Data("v3".utf8))
    }


    // MARK: One folder, several names

    @Test("a folder reached through a symbolic link, or a path with dots, shares the engine of its own path")
    func folderIdentityAcrossNames() throws {
        let directory = TemporaryDirectory()
        let disk = try openDataStore(directory.storePath())
        try FileManager.default.createSymbolicLink(atPath: directory.path + "/link", withDestinationPath: directory.storePath())
        let viaLink = try openDataStore(directory.path + "/link")
        #expect(viaLink.engine === disk.engine)
        try viaLink.setObject(Data("x".utf8), forKey: "x")
        #expect(try disk.object(forKey: "x") == Data("x".utf8))
    }
}

/// The last reference to a storage, dropped on another thread.
private final class Holder: @unchecked Sendable {
    // @unchecked Sendable: set once, then dropped once by one thread.
    var storage: DiskStorage<Data>?

    init(_ storage: DiskStorage<Data>) {
        self.storage = storage
    }
}
