import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Round 3 of the outside attack on the disk engine (store identity, the floor, the folder handle,
/// the registry). Each test reproduces one defect found; those the engine does not survive yet are
/// disabled with the number of the bug in the attack's report, so the branch stays green.
@Suite("Engine attack, round 3", .serialized)
struct EngineAttack3Tests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func set(_ store: DiskStore, _ key: String, _ data: Data) throws {
        let outcome = try store.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false)
        outcome.replaced?.remove()
    }

    /// The value of `key`, or nil if the store does not have it (or it is damaged).
    static func value(_ store: DiskStore, _ key: String) -> Data? {
        try? store.read(key, now: now).data
    }

    static func value(_ storage: DiskStorage<Data>, _ key: String) -> Data? {
        try? storage.object(forKey: key)
    }

    static func payload(_ index: Int) -> Data { Data("value \(index) ".utf8) + Data(repeating: UInt8(index & 0xFF), count: 200) }

    // MARK: Bug 1: a stray file named like the last segment number wraps the segment counter

    @Test("a stray file named fffffffe.segment does not crash the process at the next compaction")
    func straySegmentNameAtTheTopOfTheRange() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        store!.close()
        store = nil
        // Any file of that name: an empty one (a crash of some tool, a copy cut short) will do.
        #expect(FileManager.default.createFile(atPath: path + "/fffffffe.segment", contents: Data()))
        let reopened = try DiskStore(directory: path, readOnly: false)
        try reopened.compactNow()
        for index in 0..<20 {
            #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index) was lost")
        }
        reopened.close()
    }

    // MARK: Bug 8: an engine's last release inside the registry's lock

    /// Several threads each open and release a storage of their own folder, over and over. Each open
    /// of a folder not open yet looks through every other slot of the registry for an orphan, taking
    /// a strong reference to each engine under the registry's lock: when that reference is the last,
    /// the engine's deinit (which locks the registry again) runs inside the lock.
    @Test("opening and releasing storages of several folders on several threads never hangs")
    func openAndReleaseOnManyThreadsNeverHangs() throws {
        let directory = TemporaryDirectory()
        let threads = 6
        let rounds = 1_500
        for index in 0..<threads { _ = try openDataStore(directory.storePath("store\(index)")) }
        let finished = DispatchSemaphore(value: 0)
        let failures = Locked<[String]>([])
        for index in 0..<threads {
            let path = directory.storePath("store\(index)")
            let thread = Thread {
                for _ in 0..<rounds {
                    do {
                        let storage = try openDataStore(path)
                        _ = try? storage.object(forKey: "k")
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                finished.signal()
            }
            thread.start()
        }
        // A bound on work, not a stand-in for time: the rounds take a few seconds on a loaded machine.
        let deadline = DispatchTime.now() + 90
        var hung = 0
        for _ in 0..<threads where finished.wait(timeout: deadline) == .timedOut { hung += 1 }
        #expect(hung == 0, "\(hung) of \(threads) threads hung")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
    }

    // MARK: Bug 2: one flipped bit in the marker's identity hides the whole store

    @Test("a flipped bit in the marker's store identity does not hide every value of the store")
    func flippedBitInMarkerIdentity() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "kept", Data("precious".utf8))
        store!.close()
        store = nil
        let markerPath = path + "/" + StoreFolder.markerName
        var bytes = try Damage.bytes(markerPath)
        // The first digit of the identity whose lowest bit can flip to another hex digit.
        let idStart = Array("Stash store, format 3\nid ".utf8).count
        let hexDigits = Set("0123456789abcdef".utf8)
        let offset = try #require((idStart..<(idStart + 16)).first { hexDigits.contains(bytes[$0] ^ 1) })
        bytes[offset] ^= 1
        try Damage.write(bytes, to: markerPath)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(reopened, "kept") == Data("precious".utf8), "issues: \(reopened.recoveryIssues)")
        reopened.close()
    }

    // MARK: Bug 3: a crash between the renames of a compaction's outputs

    @Test("a crash after the first of several compaction outputs was published loses nothing")
    func crashBetweenPublishingCompactionOutputs() throws {
        let directory = TemporaryDirectory()
        try withEngineThresholds(in: directory.path, segmentLimit: 8 << 10) {
            let path = directory.storePath()
            let backup = directory.storePath("backup")
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            for index in 0..<120 { try Self.set(store!, "key \(index)", Self.payload(index)) }
            store!.close()
            store = nil
            // The inputs, as they are before the compaction deletes them.
            try FileManager.default.copyItem(atPath: path, toPath: backup)
            store = try DiskStore(directory: path, readOnly: false)
            try store!.compactNow()
            store!.close()
            store = nil
            let outputs = try StoreFiles(path).segments.filter { name in
                let bytes = try Damage.bytes(path + "/" + name)
                let header = bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) }
                return header.map { $0.flags & SegmentFormat.compactionFlag != 0 } ?? false
            }
            try #require(outputs.count >= 2, "the compaction must write several outputs: \(outputs)")
            // The moment of the crash: the first output renamed, the last not yet, the inputs all there,
            // and not yet the segment that commits the compaction (its floor supersedes the inputs),
            // which is created only once every output is published.
            for name in try StoreFiles(path).segments {
                let header = try Damage.bytes(path + "/" + name).withUnsafeBytes { SegmentFormat.parseHeader($0) }
                if let header, header.floor > 0 { try FileManager.default.removeItem(atPath: path + "/" + name) }
            }
            try FileManager.default.moveItem(atPath: path + "/" + outputs.last!,
                                             toPath: path + "/" + outputs.last! + SegmentFile.unpublishedSuffix)
            for name in try StoreFiles(backup).segments where !FileManager.default.fileExists(atPath: path + "/" + name) {
                try FileManager.default.copyItem(atPath: backup + "/" + name, toPath: path + "/" + name)
            }
            try? FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
            let reopened = try DiskStore(directory: path, readOnly: false)
            let lost = (0..<120).filter { Self.value(reopened, "key \($0)") != Self.payload($0) }
            #expect(lost.isEmpty, "\(lost.count) keys lost: \(lost.prefix(10))…; issues: \(reopened.recoveryIssues)")
            reopened.close()
        }
    }

    // MARK: Bug 4: the registry hands out an engine whose folder was moved away

    @Test("opening a path whose folder was renamed away reaches the new folder there, not the moved one")
    func folderRenamedAwayThenPathOpened() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let moved = directory.storePath("moved")
        var first: DiskStorage<Data>? = try openDataStore(path)
        try first!.setObject(Data("first".utf8), forKey: "a")
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        var second: DiskStorage<Data>? = try openDataStore(path)
        try second!.setObject(Data("written at the path".utf8), forKey: "b")
        first = nil
        second = nil
        // Every storage of either folder is closed: what the path holds now is what was written to it.
        let reader = try openDataStore(path)
        #expect(Self.value(reader, "b") == Data("written at the path".utf8), "the write went to the moved folder")
        #expect(Self.value(reader, "a") == nil, "a key of the moved folder appears at the path")
    }

    @Test("a read-only storage of a removed folder does not keep a writer from opening the new folder at its path")
    func readerOfRemovedFolderBlocksWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let writer = try openDataStore(path)
            try writer.setObject(Data("old".utf8), forKey: "k")
        }
        let reader = try openDataStore(path, readOnly: true)
        #expect(Self.value(reader, "k") == Data("old".utf8))
        try FileManager.default.removeItem(atPath: path)
        let writer = try openDataStore(path)
        try writer.setObject(Data("new".utf8), forKey: "k")
        #expect(Self.value(writer, "k") == Data("new".utf8))
    }

    @Test("a reader opening a path made anew by another process reads that store, not the removed one an engine still holds")
    func readerOfRecreatedPathSeesNewStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let first = try openDataStore(path)
        try first.setObject(Data("removed".utf8), forKey: "old")
        try FileManager.default.removeItem(atPath: path)
        // "Another process" (its own DiskStore, its own lock) makes a new store there and closes it.
        do {
            let other = try DiskStore(directory: path, readOnly: false)
            try Self.set(other, "new", Data("theirs".utf8))
            other.close()
        }
        let reader = try openDataStore(path, readOnly: true)
        #expect(Self.value(reader, "new") == Data("theirs".utf8))
        #expect(Self.value(reader, "old") == nil)
        withExtendedLifetime(first) {}
    }

    // MARK: Bug 6: a damaged marker and one foreign segment

    @Test("after a damaged marker, one segment copied in from another store does not take the store over")
    func foreignSegmentHijacksDamagedMarker() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let otherPath = directory.storePath("other")
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "mine", Data("of this store".utf8))
        store!.close()
        store = nil
        var other: DiskStore? = try DiskStore(directory: otherPath, readOnly: false)
        try other!.removeAll() // its active segment is now number 2
        try Self.set(other!, "theirs", Data("of another store".utf8))
        other!.close()
        other = nil
        try FileManager.default.copyItem(atPath: otherPath + "/" + SegmentFile.name(of: 2), toPath: path + "/" + SegmentFile.name(of: 2))
        try Damage.write(Array("Stash store, format 3\nid zz\n".utf8), to: path + "/" + StoreFolder.markerName)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(reopened, "mine") == Data("of this store".utf8), "issues: \(reopened.recoveryIssues)")
        #expect(Self.value(reopened, "theirs") == nil)
        reopened.close()
    }

    // MARK: Bug 7: a format-2 store with a stray top-numbered segment name

    @Test("a format-2 store with a stray ffffffff.segment keeps its version-2 segments at the upgrade")
    func formatTwoUpgradeWithStrayTopSegmentName() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try writeFormatTwoStore(path) // one segment whose record sets "old" to "v2!"
        #expect(FileManager.default.createFile(atPath: path + "/ffffffff.segment", contents: Data()))
        let reader = try DiskStore(directory: path, readOnly: true)
        #expect(Self.value(reader, "old") == Data("v2!".utf8), "reader: \(reader.recoveryIssues)")
        reader.close()
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(store, "old") == Data("v2!".utf8), "writer: \(store.recoveryIssues)")
        store.close()
    }

    // MARK: Bug 9: a segment replaced by a symbolic link or a folder

    @Test("a store opens when one of its segments was replaced by a symbolic link or a folder",
          arguments: ["symlink", "folder"])
    func segmentReplacedByLinkOrFolder(kind: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "before", Data("in segment 1".utf8))
        try store!.removeAll() // segment 2 is active now; put a key in it
        try Self.set(store!, "kept", Data("in segment 2".utf8))
        store!.close()
        store = nil
        // A third segment, then replaced: the store's own data stays in segment 2.
        let victim = path + "/" + SegmentFile.name(of: 3)
        if kind == "symlink" {
            try FileManager.default.createSymbolicLink(atPath: victim, withDestinationPath: path + "/" + SegmentFile.name(of: 2))
        } else {
            try FileManager.default.createDirectory(atPath: victim + "/inside", withIntermediateDirectories: true)
        }
        for readOnly in [true, false] {
            do {
                let reopened = try DiskStore(directory: path, readOnly: readOnly)
                #expect(Self.value(reopened, "kept") == Data("in segment 2".utf8))
                #expect(!reopened.recoveryIssues.isEmpty, "the planted \(kind) went unreported")
                reopened.close()
            } catch {
                Issue.record("a \(kind) in a segment's place keeps the store from opening (readOnly: \(readOnly)): \(error)")
            }
        }
    }

    // MARK: What held

    @Test("a FIFO in a segment's place or the snapshot's neither blocks nor keeps the store from opening")
    func fifoInPlaceOfSegmentOrSnapshot() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "kept", Data("kept".utf8))
        store!.close()
        store = nil
        #expect(mkfifo(path + "/" + SegmentFile.name(of: 2), 0o644) == 0)
        // A test running meanwhile may have lowered the snapshot threshold: a snapshot may be there.
        try? FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
        #expect(mkfifo(path + "/" + StoreFolder.directoryName, 0o644) == 0)
        let reader = try DiskStore(directory: path, readOnly: true)
        #expect(Self.value(reader, "kept") == Data("kept".utf8))
        reader.close()
        let writer = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(writer, "kept") == Data("kept".utf8))
        #expect(!writer.recoveryIssues.isEmpty)
        writer.close()
    }

    @Test("removeAll cut short after the new segment's header (its clear record lost), with the old segments all back: nothing returns")
    func removeAllCutShortBeforeItsClearRecord() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let backup = directory.storePath("backup")
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<10 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        try FileManager.default.copyItem(atPath: path, toPath: backup)
        try store!.removeAll()
        store!.close()
        store = nil
        let newest = try #require(try StoreFiles(path).segments.last)
        let bytes = try Damage.bytes(path + "/" + newest)
        try Damage.write(Array(bytes.prefix(SegmentFormat.headerLength)), to: path + "/" + newest)
        for name in try StoreFiles(backup).segments where !FileManager.default.fileExists(atPath: path + "/" + name) {
            try FileManager.default.copyItem(atPath: backup + "/" + name, toPath: path + "/" + name)
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.keys.isEmpty, "removed keys came back: \(reopened.keys)")
        reopened.close()
    }

    // MARK: A full disk

    @Test("a durable store whose large values filled the disk frees space by removing one value, trimming, or removeAll",
          .enabled(if: EngineAttack3Tests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: ["removeObject", "trim", "removeAll"])
    func durableFullDiskOfValueFiles(how: String) throws {
        let directory = TemporaryDirectory()
        let mountPoint = directory.path + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        try #require(Self.run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mountPoint]) == 0)
        defer { _ = Self.run("/usr/bin/umount", ["-l", mountPoint]) }
        let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint), durable: true)
        var keys: [String] = []
        do {
            let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            for index in 0..<100 {
                do {
                    try disk.setObject(Data(repeating: UInt8(index), count: 300_000), forKey: "v\(index)")
                    keys.append("v\(index)")
                } catch {
                    #expect(FileIO.isErrno(error, .ENOSPC), "\(error)")
                    break
                }
            }
            try #require(keys.count >= 3)
            // The last free pages too: not even a tombstone fits.
            let filler = FileManager.default.createFile(atPath: mountPoint + "/filler", contents: nil)
            try #require(filler)
            let fd = open(mountPoint + "/filler", O_WRONLY)
            let page = [UInt8](repeating: 1, count: 4096)
            while write(fd, page, page.count) == page.count {}
            close(fd)
            let before = Self.freeBytes(mountPoint)
            do {
                switch how {
                case "removeObject": try disk.removeObject(forKey: keys[0])
                case "trim": try disk.trim(toSize: 300_000)
                default: try disk.removeAll()
                }
            } catch {
                Issue.record("\(how) on a full disk failed: \(error)")
            }
            #expect(Self.freeBytes(mountPoint) >= before + 290_000, "\(how) freed no space")
            try? FileManager.default.removeItem(atPath: mountPoint + "/filler")
            try disk.setObject(Data("after".utf8), forKey: "after")
        }
        let reopened = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        #expect(try reopened.object(forKey: "after") == Data("after".utf8))
        for key in keys.dropFirst(how == "removeObject" ? 1 : keys.count - 1) {
            if let value = try? reopened.object(forKey: key) { #expect(value.count == 300_000, "\(key)") }
        }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    static let canMount: Bool = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")

    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    static func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

}
