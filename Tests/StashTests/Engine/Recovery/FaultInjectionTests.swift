import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Contract items 7 and 10 under real faults: a full disk (a 1 MiB tmpfs), a read-only file system,
/// permission denied (the `stash` tool run as `nobody`), a folder removed underneath, value files and
/// segments replaced by directories, symlinks and FIFOs.
///
/// The stores keep every value in a file of its own (`storesValuesAsFiles`), so that the faults hit
/// value files as well as segments. After each fault, every test checks that the error is a
/// `StorageError` with its cause, that no value file is left that the index does not list (and no
/// temporary file), that what was stored before still reads, that a reopen replays the segments
/// without `recoveryIssues`, and that the store works again once the fault is gone. The tests that
/// mount or change users need root (CI runs as root) and are skipped with a reason elsewhere.
@Suite("Fault injection")
struct FaultInjectionTests {
    // MARK: 1. Disk full

    @Test("disk full: a value write and a segment append that hit ENOSPC throw it, leave nothing behind, and writes work once there is room",
          .enabled(if: Host.canMount, "needs root and permission to mount a tmpfs"))
    func diskFull() throws {
        let directory = TemporaryDirectory()
        try withTmpfs(in: directory) { mountPoint in
            let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
            let filler = Filler(mountPoint + "/filler")
            // Its record (> 6 KB) is larger than a page: appending it always needs a new page.
            let longKey = "long-" + String(repeating: "κ", count: 3000)
            var stored = [longKey: Data("old".utf8)]
            do {
                let disk = try openDataStore(config)
                try disk.setObject(Data("old".utf8), forKey: longKey)

                // Values until the disk is full: the value file's write fails.
                var failure: (key: String, error: StorageError)?
                for index in 0..<64 where failure == nil {
                    let key = "value-\(index)"
                    let value = Data(repeating: UInt8(truncatingIfNeeded: index), count: 100_000)
                    do {
                        try disk.setObject(value, forKey: key)
                        stored[key] = value
                    } catch let error as StorageError {
                        failure = (key, error)
                    }
                }
                let (failedKey, error) = try #require(failure, "1 MiB of tmpfs never filled up")
                #expect(posixCode(error) == .ENOSPC, "\(error)")
                #expect(!disk.allKeys.contains(failedKey))
                try expectIntact(disk, stored)

                // So full that the new value's file fits (one free page) but its record does not: at
                // once where appends are `pwrite`s; where they go through a mapping, once the records
                // have filled the room reserved past them before the disk filled up.
                try filler.fill(leavingFreePages: 1)
                let journal = try activeSegment(mountPoint + "/store")
                var appendError: StorageError?
                var recordsEnd = 0
                for attempt in 0..<64 where appendError == nil {
                    recordsEnd = try Damage.recordsEnd(journal)
                    let value = Data("new \(attempt)".utf8)
                    do {
                        try disk.setObject(value, forKey: longKey)
                        stored[longKey] = value
                    } catch let error as StorageError {
                        appendError = error
                    }
                }
                if case .io(let operation, let path, let underlying as POSIXError)? = appendError {
                    #expect(underlying.code == .ENOSPC)
                    #expect(operation.contains("write") && path == journal, "expected the segment append to fail, got \(operation) of \(path)")
                } else {
                    Issue.record("expected an I/O error with ENOSPC, got \(String(describing: appendError))")
                }
                #expect(fileSize(journal) == recordsEnd, "the failed append was not cut back")
                try expectIntact(disk, stored) // the new value's file was removed; the old value reads

                // Removing on a full disk: either done (its file gone) or ENOSPC with the value still there.
                do {
                    try disk.removeObject(forKey: "value-0")
                    stored["value-0"] = nil
                } catch {
                    #expect(FileIO.isErrno(error, .ENOSPC), "\(error)")
                }
                try expectIntact(disk, stored)
            }
            // Reopened before there is room again: the segments replay without damage.
            do {
                let disk = try openDataStore(config)
                #expect(disk.recoveryIssues.isEmpty)
                try expectIntact(disk, stored)
            }
            // Room again: writes succeed, and survive a reopen.
            try filler.free()
            do {
                let disk = try openDataStore(config)
                try disk.setObject(Data("new".utf8), forKey: longKey)
                try disk.setObject(Data("after".utf8), forKey: "after")
                stored[longKey] = Data("new".utf8)
                stored["after"] = Data("after".utf8)
                try expectIntact(disk, stored)
            }
            let reopened = try openDataStore(config)
            #expect(reopened.recoveryIssues.isEmpty)
            try expectIntact(reopened, stored)
        }
    }

    /// With 1,000 records, they end in the last page of the room reserved for appends: sealing the
    /// segment frees no page, and the compaction's new segment does not fit (it does not start). With
    /// 480, sealing it frees the room past the records' last page: the compaction starts, and copies
    /// on a disk full but for those pages.
    @Test("disk full during the compaction a write triggers: the write either fails with ENOSPC and keeps the old value, or succeeds",
          .enabled(if: Host.canMount, "needs root and permission to mount a tmpfs"), arguments: [1000, 480])
    func diskFullDuringCompaction(records: Int) throws {
        let directory = TemporaryDirectory()
        try withTmpfs(in: directory) { mountPoint in
            let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
            let store = mountPoint + "/store"
            let filler = Filler(mountPoint + "/filler")
            do {
                let disk = try openDataStore(config)
                // Records for one key, then (thresholds lowered) the next write starts a compaction.
                // Empty values take no page on a tmpfs.
                for _ in 0..<records { try disk.setObject(Data(), forKey: "k") }
                let segment = try activeSegment(store)
                let segmentSize = try #require(fileSize(segment))
                let recordsEnd = try Damage.recordsEnd(segment)
                let recordsPagesEnd = (recordsEnd + Host.pageSize - 1) / Host.pageSize * Host.pageSize
                try #require(recordsPagesEnd - recordsEnd >= 100, "the next record must fit in the records' last page")
                try #require((segmentSize > recordsPagesEnd) == (records == 480),
                             "room past the records' last page: the file has \(segmentSize) bytes, its records \(recordsEnd)")
                // No free page: the new record fits in the segment; a new segment for the compaction
                // only in the pages sealing the segment frees.
                try filler.fill(leavingFreePages: 0)
                // Lowered for the open store itself: a store takes its folder's thresholds when it opens
                // (`withEngineThresholds` around this write would leave this one's as they were).
                disk.engine.sync { $0.thresholds.compactionMinimum = 4 << 10 }
                do {
                    try disk.setObject(Data(), forKey: "k")
                    #expect(try disk.object(forKey: "k") == Data())
                } catch {
                    #expect(FileIO.isErrno(error, .ENOSPC), "\(error)")
                    #expect(try disk.object(forKey: "k") == Data())
                }
                disk.waitForCompaction()
                try expectNoStrayFiles(disk)

                try filler.free()
                try disk.setObject(Data("after".utf8), forKey: "k")
                #expect(try disk.object(forKey: "k") == Data("after".utf8))
                // Where the compaction did not start for want of room, this write starts it: finished
                // before the store closes and opens again (a close in mid-copy is CompactionClose's subject).
                disk.waitForCompaction()
            }
            let reopened = try openDataStore(config)
            #expect(reopened.recoveryIssues.isEmpty)
            try expectIntact(reopened, ["k": Data("after".utf8)])
        }
    }

    @Test("a cache that filled the disk is cleared through the API: removeAll, or removing every entry, frees the space at once",
          .enabled(if: Host.canMount, "needs root and permission to mount a tmpfs"),
          arguments: ["removeAll", "trim", "removeObject"])
    func fullDiskCanBeCleared(how: String) throws {
        let directory = TemporaryDirectory()
        try withTmpfs(size: "2m", in: directory) { mountPoint in
            let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
            let disk = try openDataStore(config)
            // Small values, packed into the segment, until the disk is full.
            var keys: [String] = []
            for index in 0..<100_000 {
                do {
                    try disk.setObject(Data(repeating: UInt8(index % 251), count: 4_000), forKey: "k\(index)")
                    keys.append("k\(index)")
                } catch {
                    #expect(FileIO.isErrno(error, .ENOSPC), "\(error)")
                    break
                }
            }
            try #require(keys.count > 100, "the disk did not fill with values")
            // Values read back first: their segments are mapped for reads, and a mapping keeps a removed file's blocks.
            for key in keys.prefix(3) + keys.suffix(3) { #expect(try disk.object(forKey: key).count == 4_000) }
            let full = try freeBytes(mountPoint)
            // Nothing released on the release thread meanwhile: the space must be free when the call returns.
            try BackgroundRelease.holdingReleases {
                switch how {
                case "removeAll": try disk.removeAll()
                case "trim": try disk.trim(toSize: 0)
                default: for key in keys { try disk.removeObject(forKey: key) }
                }
                #expect(disk.allKeys.isEmpty)
                #expect(try freeBytes(mountPoint) > full + 1_000_000, "\(how) freed no space")
            }
            try disk.setObject(Data("after".utf8), forKey: "after")
            #expect(try disk.object(forKey: "after") == Data("after".utf8))
            let reopened = try DiskStorage(config: DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint), readOnly: true),
                                           transformer: TransformerFactory.forData())
            #expect(reopened.allKeys == ["after"])
        }
    }

    // Contract item 11: a folder is known by what it is (device and inode), not by the path that names it.
    @Test("a store opened through a bind mount of its folder shares the engine of the store opened by its own path",
          .enabled(if: Host.canMount, "needs root and permission to mount"))
    func bindMountSharesEngine() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let disk = try openDataStore(store)
        try disk.setObject(Data("a".utf8), forKey: "a")
        let other = directory.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
        try mountTool(["--bind", store, other])
        defer { _ = try? unmountTool(["-l", other]) }
        let viaMount = try openDataStore(other)
        #expect(viaMount.engine === disk.engine, "a second engine on one folder (it would have got inUse from the lock)")
        try viaMount.setObject(Data("b".utf8), forKey: "b")
        #expect(try disk.object(forKey: "b") == Data("b".utf8))
    }

    // Where the kernel has no casefold ext4 (no CONFIG_UNICODE), Tests/Support/casefold-fuse.py stands in.
    @Test("on a case-insensitive file system, another spelling of the folder's name shares the engine",
          .enabled(if: Host.caseInsensitiveMount.isAvailable || Host.isCaseInsensitiveMountRequired,
                   "needs root and a case-insensitive file system to mount: ext4 with casefold (a kernel with CONFIG_UNICODE), or FUSE with Debian's python3-fusepy"))
    func caseInsensitiveNamesShareEngine() throws {
        let directory = TemporaryDirectory()
        try withCaseInsensitiveMount(in: directory) { folder in
            let disk = try openDataStore(folder + "/Images")
            try disk.setObject(Data("a".utf8), forKey: "a")
            let other = try openDataStore(folder + "/images")
            #expect(other.engine === disk.engine, "a second engine on one folder")
            #expect(try other.object(forKey: "a") == Data("a".utf8))
            try other.setObject(Data("b".utf8), forKey: "b")
            #expect(try disk.object(forKey: "b") == Data("b".utf8))
        }
    }

    // MARK: 2. Read-only file system

    // `mount -o remount,ro` of the tmpfs is refused (EBUSY) while a store is open: the store holds its
    // segment open for writing. A read-only bind mount of the store's folder over itself does not
    // reach the store: it creates and removes files through its own descriptor of the folder, opened
    // on the writable mount (so it never writes through a path that names something else by then).
    @Test("a read-only bind mount over an open store's folder: the store's writes still land, and readers of the mount see them",
          .enabled(if: Host.canMount, "needs root and permission to mount a tmpfs"))
    func readOnlyUnderOpenStore() throws {
        let directory = TemporaryDirectory()
        try withTmpfs(in: directory) { mountPoint in
            let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
            let store = mountPoint + "/store"
            var stored = ["a": Data("alpha".utf8), "b": Data("beta".utf8), "c": Data("gamma".utf8)]
            do {
                let disk = try openDataStore(config)
                for (key, value) in stored { try disk.setObject(value, forKey: key) }
                try mountTool(["--bind", store, store])
                try mountTool(["-o", "remount,bind,ro", store])

                // The store writes through its own descriptor of the folder, opened on the writable
                // mount beneath: its writes keep working and land in the file system.
                try disk.setObject(Data("new".utf8), forKey: "new")
                stored["new"] = Data("new".utf8)
                for (key, value) in stored { #expect(try disk.object(forKey: key) == value) }
                // Seen through the read-only mount too: another opener reads them.
                let reader = try DiskStorage(config: DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint), readOnly: true),
                                             transformer: TransformerFactory.forData())
                #expect(try reader.object(forKey: "new") == Data("new".utf8))
                try expectIntact(disk, stored, strays: false)

                try unmountTool([store])
                try disk.setObject(Data("new".utf8), forKey: "new")
                try disk.setObject(Data("changed".utf8), forKey: "a")
                try disk.removeObject(forKey: "c")
                stored["new"] = Data("new".utf8)
                stored["a"] = Data("changed".utf8)
                stored["c"] = nil
                try expectIntact(disk, stored, strays: false)
            }
            let reopened = try openDataStore(config)
            #expect(reopened.recoveryIssues.isEmpty)
            try expectIntact(reopened, stored)
        }
    }

    @Test("a store on a file system that is read-only when it is opened: opening throws EROFS; after remounting read-write it opens intact",
          .enabled(if: Host.canMount, "needs root and permission to mount a tmpfs"))
    func readOnlyAtOpen() throws {
        let directory = TemporaryDirectory()
        try withTmpfs(in: directory) { mountPoint in
            let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint))
            do {
                let disk = try openDataStore(config)
                try disk.setObject(Data("alpha".utf8), forKey: "a")
            }
            // Succeeds only because the released store closed every file it had open for writing, and
            // let go of its writable mappings: large ones on the release thread, waited for here (on a
            // loaded machine the remount came first and was refused, "mount point is busy").
            BackgroundRelease.finish()
            try mountTool(["-o", "remount,ro", mountPoint])
            let error = storageError { _ = try openDataStore(config) }
            #expect(posixCode(error) == .EROFS, "\(String(describing: error))")

            try mountTool(["-o", "remount,rw", mountPoint])
            let disk = try openDataStore(config)
            #expect(disk.recoveryIssues.isEmpty)
            try disk.setObject(Data("beta".utf8), forKey: "b")
            try expectIntact(disk, ["a": Data("alpha".utf8), "b": Data("beta".utf8)])
        }
    }

    // MARK: 3. Permission denied

    @Test("permission denied: `stash set` as a non-root user in a read-only store (a-w) exits 1 saying so; get still works; writable again, set works",
          .enabled(if: Host.canRunAsNobody, "needs root and setpriv to run `stash` as nobody"))
    func permissionDenied() throws {
        let directory = TemporaryDirectory()
        let store = try makeNobodyStore(in: directory)
        try expectSuccess(stashAsNobody(["set", "kept", "kept value"], store: store))
        try expectSuccess(stashAsNobody(["set", "gone", "gone value"], store: store))
        let goneHash = SHA256.hex(of: "gone")

        // chmod -R a-w: a packed write appends to an existing segment, which a read-only folder alone allows.
        let files = try FileManager.default.contentsOfDirectory(atPath: store)
        for name in files { try #require(chmod(store + "/" + name, 0o444) == 0) }
        try #require(chmod(store, 0o555) == 0)
        defer {
            _ = chmod(store, 0o755)
            for name in files { _ = chmod(store + "/" + name, 0o644) }
        }
        let listing = try Set(FileManager.default.contentsOfDirectory(atPath: store))
        let set = try stashAsNobody(["set", "new", "new value"], store: store)
        #expect(set.status == 1)
        #expect(set.stderr.contains("Permission denied"), "stderr: \(set.stderr)")
        #expect(try Set(FileManager.default.contentsOfDirectory(atPath: store)) == listing, "the failed set left a file behind")
        let get = try stashAsNobody(["get", "kept"], store: store)
        #expect(get.status == 0, "stderr: \(get.stderr)")
        #expect(get.stdout == Data("kept value".utf8))
        // A remove either fails saying so (the value kept), or removes the value's file too.
        let remove = try stashAsNobody(["rm", "gone"], store: store)
        let goneFiles = try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.hasPrefix(goneHash + ".") }
        if remove.status == 0 {
            #expect(goneFiles.isEmpty, "`stash rm` exited 0 but the value's file is still there: \(goneFiles)")
        } else {
            #expect(remove.status == 1 && remove.stderr.contains("Permission denied"), "stderr: \(remove.stderr)")
            #expect(try stashAsNobody(["get", "gone"], store: store).stdout == Data("gone value".utf8))
        }

        try #require(chmod(store, 0o755) == 0)
        for name in files { try #require(chmod(store + "/" + name, 0o644) == 0) }
        try expectSuccess(stashAsNobody(["set", "new", "new value"], store: store))
        #expect(try stashAsNobody(["get", "new"], store: store).stdout == Data("new value".utf8))
        #expect(try stashAsNobody(["get", "kept"], store: store).stdout == Data("kept value".utf8))
    }

    // MARK: 4. The folder removed underneath

    // DiskFailureTests covers "the next write recreates the folder"; this adds memory: keys only on
    // disk, a key only in memory, existsObject against allKeys, and a reopen afterwards.
    @Test("a folder removed under a Storage with memory: a disk read fails then says notFound, allKeys and existsObject agree, no stale memory copy after the next write")
    func removedFolderWithMemory() throws {
        let directory = TemporaryDirectory()
        let keys = ["a", "b", "c", "d"]
        do {
            // countLimit 1: after three writes only "c" is in memory, "a" and "b" are on disk only.
            let storage = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: 1), valuesAsFiles: true)
            for (age, key) in ["a", "b", "c"].enumerated() { try storage.setObject(User(name: key, age: age), forKey: key) }
            try FileManager.default.removeItem(atPath: directory.storePath())

            let readError = storageError { _ = try storage.object(forKey: "a") }
            #expect(readError?.isCorrupted == true || readError?.isNotFound == true, "\(String(describing: readError))")
            #expect(storageError { _ = try storage.object(forKey: "a") }?.isNotFound == true)
            for key in keys { #expect(try storage.existsObject(forKey: key) == storage.allKeys.contains(key), "key \(key)") }

            try storage.setObject(User(name: "d", age: 3), forKey: "d")
            #expect(storageError { _ = try storage.object(forKey: "c") }?.isNotFound == true, "memory served a copy the disk no longer has")
            #expect(storageError { _ = try storage.entry(forKey: "b") }?.isNotFound == true)
            #expect(storage.allKeys == ["d"])
            for key in keys { #expect(try storage.existsObject(forKey: key) == (key == "d"), "key \(key)") }
            #expect(try storage.object(forKey: "d") == User(name: "d", age: 3))
            try expectNoStrayFiles(storage.hybridStorage.diskStorage)
        }
        let reopened = try makeUserStorage(in: directory, valuesAsFiles: true)
        #expect(reopened.recoveryIssues.isEmpty)
        #expect(reopened.allKeys == ["d"])
        #expect(try reopened.object(forKey: "d") == User(name: "d", age: 3))
    }

    @Test("a folder removed and recreated under an open store (by opening it again): later writes persist and the lock still keeps others out")
    func removedFolderRecreatedByAnotherOpen() throws {
        let directory = TemporaryDirectory()
        do {
            let storage = try makeUserStorage(in: directory, valuesAsFiles: true)
            try storage.setObject(User(name: "a", age: 1), forKey: "a")
            try FileManager.default.removeItem(atPath: directory.storePath())
            // Opening the folder again recreates it, and shares the open engine.
            let second = try makeUserStorage(in: directory, valuesAsFiles: true)
            #expect(second.hybridStorage.engine === storage.hybridStorage.engine)

            try storage.setObject(User(name: "b", age: 2), forKey: "b")
            #expect(try storage.object(forKey: "b") == User(name: "b", age: 2))
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.storePath()).contains { $0.hasSuffix(".segment") },
                    "the write went to a segment that is no longer in the folder")
            // Another process opening the folder now must find it locked.
            let fd = open(directory.storePath(), O_RDONLY | O_DIRECTORY)
            #expect(fd >= 0)
            #expect(flock(fd, LOCK_EX | LOCK_NB) != 0, "the store is open, yet its folder's lock is free")
            close(fd)
        }
        let reopened = try makeUserStorage(in: directory, valuesAsFiles: true)
        #expect(reopened.recoveryIssues.isEmpty)
        #expect(try reopened.object(forKey: "b") == User(name: "b", age: 2), "a write that returned was lost on reopen")
        try expectNoStrayFiles(reopened.hybridStorage.diskStorage)
    }

    // MARK: 5. Value files replaced

    enum Replacement: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case directory
        /// A symlink to a file outside the store, of another size than the value.
        case symlinkToOutsideFile
        /// A symlink to a file outside the store that has exactly the value's size.
        case symlinkToOutsideFileOfSameSize
        var testDescription: String { rawValue }
    }

    // DiskFailureTests and DiskIntegrityTests cover a directory in place of a value file (an error; other
    // keys and a rewrite work). This adds symlinks, checks the error's kind, the drop (also after a
    // reopen), and overwrite and remove of such a key, which must never touch the file outside.
    @Test("a value file replaced by a directory or a symlink out of the store: read throws corrupted and drops the key; overwrite and remove work; the outside file is untouched",
          arguments: Replacement.allCases)
    func replacedValueFile(replacement: Replacement) throws {
        let directory = TemporaryDirectory()
        let outside = directory.path + "/outside.txt"
        let secret = Data("SECRET-OUTSIDE".utf8) // 14 bytes
        try secret.write(to: URL(fileURLWithPath: outside))
        let value = replacement == .symlinkToOutsideFileOfSameSize ? Data("inside-value-1".utf8) : Data("v".utf8)
        do {
            let disk = try openDataStore(directory.diskConfig())
            for key in ["read", "overwrite", "remove", "other"] { try disk.setObject(value, forKey: key) }
            for key in ["read", "overwrite", "remove"] {
                let path = try #require(try disk.entry(forKey: key).filePath)
                try FileManager.default.removeItem(atPath: path)
                switch replacement {
                case .directory: try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
                case .symlinkToOutsideFile, .symlinkToOutsideFileOfSameSize:
                    try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: outside)
                }
            }

            let error = storageError { _ = try disk.object(forKey: "read") }
            #expect(error?.isCorrupted == true, "\(String(describing: error))")
            #expect(!disk.existsObject(forKey: "read"))
            try disk.setObject(Data("overwritten".utf8), forKey: "overwrite")
            #expect(try disk.object(forKey: "overwrite") == Data("overwritten".utf8))
            try disk.removeObject(forKey: "remove")
            #expect(storageError { _ = try disk.object(forKey: "remove") }?.isNotFound == true)
            #expect(Set(disk.allKeys) == ["overwrite", "other"])
            try expectNoStrayFiles(disk)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == secret, "the file outside the store was changed")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.storePath()).allSatisfy { !isSymlink(directory.storePath() + "/" + $0) },
                "a symlink the store should have dropped is still there")
        let reopened = try openDataStore(directory.diskConfig())
        #expect(reopened.recoveryIssues.isEmpty)
        try expectIntact(reopened, ["overwrite": Data("overwritten".utf8), "other": value])
    }

    enum PlantedName: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// The file name the key's next write creates (the next value file number).
        case nextValueFile
        /// The segment `removeAll` starts next.
        case nextSegment
        var testDescription: String { rawValue }
    }

    @Test("a symlink planted where the store is about to create a file is not followed: the file outside is never written",
          arguments: PlantedName.allCases)
    func plantedSymlinkIsNotFollowed(name: PlantedName) throws {
        let directory = TemporaryDirectory()
        let outside = directory.path + "/outside.txt"
        let secret = Data("SECRET-OUTSIDE".utf8)
        try secret.write(to: URL(fileURLWithPath: outside))
        do {
            let disk = try openDataStore(directory.diskConfig())
            try disk.setObject(Data("first".utf8), forKey: "k")
            let path = try #require(try disk.entry(forKey: "k").filePath)
            let planted: String
            switch name {
            case .nextValueFile:
                let id = try #require(ValueFiles.id(ofName: (path as NSString).lastPathComponent))
                planted = disk.path + "/" + ValueFiles.name(of: id + 1)
            case .nextSegment:
                let id = try #require(SegmentFile.id(ofName: (try activeSegment(disk.path) as NSString).lastPathComponent))
                planted = disk.path + "/" + SegmentFile.name(of: id + 1)
            }
            try FileManager.default.createSymbolicLink(atPath: planted, withDestinationPath: outside)

            // Either operation may fail; neither may write through the symlink.
            switch name {
            case .nextValueFile: try? disk.setObject(Data("second".utf8), forKey: "k")
            case .nextSegment: try? disk.removeAll()
            }
            #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == secret, "the store wrote through a symlink to a file outside it")
            #expect(try FileManager.default.contentsOfDirectory(atPath: disk.path).filter { $0.hasSuffix(".segment") }
                .allSatisfy { !isSymlink(disk.path + "/" + $0) || $0 == (planted as NSString).lastPathComponent },
                "a segment is now a symlink out of the store")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside)) == secret)
    }

    // MARK: 6. A segment unusable at open

    @Test("a segment replaced by a directory: the store opens without it (reported, the directory left alone), and whole again once the segment is back")
    func journalReplacedByDirectory() throws {
        let directory = TemporaryDirectory()
        let saved = directory.path + "/segment.saved"
        do {
            let disk = try openDataStore(directory.diskConfig())
            try disk.setObject(Data("alpha".utf8), forKey: "a")
            try disk.setObject(Data("beta".utf8), forKey: "b")
        }
        let journal = try activeSegment(directory.storePath())
        try FileManager.default.moveItem(atPath: journal, toPath: saved)
        try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: false)
        try Data("planted".utf8).write(to: URL(fileURLWithPath: journal + "/inside"))

        for attempt in 1...2 {
            let disk = try openDataStore(directory.storePath(), readOnly: attempt == 2)
            #expect(disk.allKeys.isEmpty, "attempt \(attempt)")
            #expect(disk.recoveryIssues.contains { "\($0)".contains("not a regular file") }, "attempt \(attempt): \(disk.recoveryIssues)")
            #expect(FileManager.default.fileExists(atPath: journal + "/inside"), "the directory was touched")
        }

        try FileManager.default.removeItem(atPath: journal)
        try FileManager.default.moveItem(atPath: saved, toPath: journal)
        let reopened: DiskStorage<Data>
        do {
            reopened = try openDataStore(directory.diskConfig())
        } catch {
            Issue.record("the segment is back, yet the store does not open in this process: \(error)")
            return
        }
        #expect(reopened.recoveryIssues.isEmpty)
        try expectIntact(reopened, ["a": Data("alpha".utf8), "b": Data("beta".utf8)])
    }

    @Test("a segment its user cannot read: `stash get` as a non-root user exits 1 with Permission denied; readable again, it works",
          .enabled(if: Host.canRunAsNobody, "needs root and setpriv to run `stash` as nobody"))
    func unreadableJournal() throws {
        let directory = TemporaryDirectory()
        let store = try makeNobodyStore(in: directory)
        try expectSuccess(stashAsNobody(["set", "k", "value"], store: store))
        let journal = try activeSegment(store)
        try #require(chmod(journal, 0o000) == 0)
        defer { _ = chmod(journal, 0o644) }

        let get = try stashAsNobody(["get", "k"], store: store)
        #expect(get.status == 1)
        #expect(get.stdout.isEmpty)
        #expect(get.stderr.contains("Permission denied") && get.stderr.contains(".segment"), "stderr: \(get.stderr)")

        try #require(chmod(journal, 0o644) == 0)
        let again = try stashAsNobody(["get", "k"], store: store)
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(again.stdout == Data("value".utf8))
        try expectSuccess(stashAsNobody(["set", "k2", "v2"], store: store))
    }

    @Test("a FIFO in place of a segment: `stash get` reports it instead of blocking forever")
    func journalReplacedByFIFO() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try #require(try stash(["--dir", store, "set", "k", "value"]).status == 0)
        let journal = try activeSegment(store)
        try FileManager.default.moveItem(atPath: journal, toPath: directory.path + "/journal.saved")
        try #require(mkfifo(journal, 0o644) == 0)

        // A bounded wait for the child (killed at the deadline), not a sleep: a fixed store returns at once.
        let get = try stash(["--dir", store, "get", "k"], deadline: TestDeadline.long)
        #expect(!get.timedOut, "opening a store whose segment is a FIFO blocks forever")
        // An error, or (the FIFO is no segment: its records are reported lost) no value, said on stderr.
        #expect(get.status == 1 || get.status == 3, "stderr: \(get.stderr)")
        #expect(get.stdout.isEmpty && !get.stderr.isEmpty)

        try FileManager.default.removeItem(atPath: journal)
        try FileManager.default.moveItem(atPath: directory.path + "/journal.saved", toPath: journal)
        #expect(try stash(["--dir", store, "get", "k"]).stdout == Data("value".utf8))
    }

    @Test("a segment deleted while the store is closed: the store opens empty and removes the value files no key reaches any more")
    func missingJournal() throws {
        let directory = TemporaryDirectory()
        do {
            let disk = try openDataStore(directory.diskConfig())
            try disk.setObject(Data(repeating: 1, count: 10_000), forKey: "a")
            try disk.setObject(Data(repeating: 2, count: 10_000), forKey: "b")
        }
        try FileManager.default.removeItem(atPath: try activeSegment(directory.storePath()))
        let disk = try openDataStore(directory.diskConfig())
        #expect(disk.allKeys.isEmpty)
        #expect(disk.totalSize == 0)
        try expectNoStrayFiles(disk) // else their bytes stay on disk, unlisted and outside maxSize
        try disk.setObject(Data("new".utf8), forKey: "c")
        try expectIntact(disk, ["c": Data("new".utf8)])
    }
}

// MARK: - Checks

/// A store of `config` that keeps every value in a file of its own.
private func openDataStore(_ config: DiskConfig) throws -> DiskStorage<Data> {
    var config = config
    config.storesValuesAsFiles = true
    return try DiskStorage(config: config, transformer: TransformerFactory.forData())
}

/// The store's active (last) segment file.
private func activeSegment(_ store: String) throws -> String {
    store + "/" + (try #require(try FileManager.default.contentsOfDirectory(atPath: store).filter { $0.hasSuffix(".segment") }.max()))
}

/// The POSIX code of an ``StorageError/io(operation:path:underlying:)`` error.
private func posixCode(_ error: StorageError?) -> POSIXErrorCode? {
    if case .io(_, _, let underlying as POSIXError)? = error { return underlying.code }
    return nil
}

/// Every value file in the store folder is one the index lists (directories aside), and no
/// temporary file is left.
private func expectNoStrayFiles<T>(_ disk: DiskStorage<T>, sourceLocation: SourceLocation = #_sourceLocation) throws {
    let listed = Set(disk.entryInfos.compactMap { $0.filePath.map { ($0 as NSString).lastPathComponent } })
    let names = try FileManager.default.contentsOfDirectory(atPath: disk.path)
    let valueFiles = Set(names.filter { DiskStore.isValueFileName($0) && !isDirectory(disk.path + "/" + $0) })
    #expect(valueFiles == listed, "value files the index does not list: \(valueFiles.subtracting(listed).sorted())",
            sourceLocation: sourceLocation)
    #expect(!names.contains { $0.hasSuffix(".tmp") }, sourceLocation: sourceLocation)
}

/// The store holds exactly `values`, each reads back, and (with `strays`) no stray file is left.
private func expectIntact(_ disk: DiskStorage<Data>, _ values: [String: Data], strays: Bool = true,
                          sourceLocation: SourceLocation = #_sourceLocation) throws {
    #expect(Set(disk.allKeys) == Set(values.keys), sourceLocation: sourceLocation)
    for (key, value) in values {
        do {
            #expect(try disk.object(forKey: key) == value, "key \(key.prefix(20))", sourceLocation: sourceLocation)
        } catch {
            Issue.record("reading \(key.prefix(20)) failed: \(error)", sourceLocation: sourceLocation)
        }
    }
    if strays { try expectNoStrayFiles(disk, sourceLocation: sourceLocation) }
}

private func fileSize(_ path: String) -> Int? {
    var info = stat()
    return lstat(path, &info) == 0 ? Int(info.st_size) : nil
}

private func isDirectory(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}

private func isSymlink(_ path: String) -> Bool {
    var info = stat()
    return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
}

/// The bytes free on the file system of `path`.
private func freeBytes(_ path: String) throws -> Int {
    var info = statvfs()
    try #require(statvfs(path, &info) == 0)
    return Int(info.f_bavail) * Int(info.f_frsize)
}

// MARK: - The host: root, mounting, other users

private enum Host {
    static let isRoot = geteuid() == 0
    static let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    static let mount = tool("mount")
    static let umount = tool("umount")
    static let setpriv = tool("setpriv")
    static let nobody: (uid: uid_t, gid: gid_t)? = {
        guard let entry = getpwnam("nobody") else { return nil }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    /// Root, the mount tools, and a trial tmpfs mount that works.
    static let canMount: Bool = {
        guard isRoot, let mount, let umount else { return false }
        let point = FileManager.default.temporaryDirectory.appendingPathComponent("StashMountProbe-\(UUID().uuidString)").path
        guard (try? FileManager.default.createDirectory(atPath: point, withIntermediateDirectories: true)) != nil else { return false }
        defer { try? FileManager.default.removeItem(atPath: point) }
        guard let run = try? runTool(mount, ["-t", "tmpfs", "-o", "size=64k", "tmpfs", point]), run.status == 0 else { return false }
        _ = try? runTool(umount, [point])
        return true
    }()

    static let canRunAsNobody = isRoot && setpriv != nil && nobody != nil

    /// STASH_REQUIRE_CASEFOLD (set by `.ci/run`): the case-insensitive test fails rather than skips.
    static let isCaseInsensitiveMountRequired = ProcessInfo.processInfo.environment["STASH_REQUIRE_CASEFOLD"] != nil

    /// How to mount a case-insensitive file system here, or why none can be: ext4 with casefold, else
    /// the FUSE stand-in; each is taken only once a trial mount shows "Images" and "images" as one folder.
    static let caseInsensitiveMount: Result<CaseInsensitiveMounter, ToolFailure> = {
        guard canMount else { return .failure(ToolFailure(message: "needs root and permission to mount")) }
        var reasons: [String] = []
        for (name, make) in [("ext4 with casefold", casefoldExt4), ("casefold-fuse.py", casefoldFUSE)] {
            do {
                let mounter = try make()
                try probe(mounter)
                return .success(mounter)
            } catch {
                reasons.append("\(name): \(error)")
            }
        }
        return .failure(ToolFailure(message: "no case-insensitive file system can be mounted here (" + reasons.joined(separator: "; ") + ")"))
    }()

    /// An ext4 image with casefold, kept in the given folder and loop-mounted; a kernel without
    /// CONFIG_UNICODE refuses to mount it.
    private static func casefoldExt4() throws -> CaseInsensitiveMounter {
        guard let mkfs = tool("mkfs.ext4"), let chattr = tool("chattr") else { throw ToolFailure(message: "needs mkfs.ext4 and chattr") }
        return { folder, point in
            let image = folder + "/casefold.img"
            guard FileManager.default.createFile(atPath: image, contents: nil), truncate(image, 16 << 20) == 0 else {
                throw ToolFailure(message: "cannot create \(image)")
            }
            let made = try runTool(mkfs, ["-q", "-F", "-O", "casefold", image])
            guard made.status == 0 else { throw ToolFailure(message: "mkfs.ext4 -O casefold failed: \(made.stderr)") }
            let mounted = try runTool(Host.mount!, ["-o", "loop", image, point])
            guard mounted.status == 0 else { throw ToolFailure(message: "mount failed: \(mounted.stderr)") }
            do {
                try FileManager.default.createDirectory(atPath: point + "/ci", withIntermediateDirectories: true)
                let flagged = try runTool(chattr, ["+F", point + "/ci"])
                guard flagged.status == 0 else { throw ToolFailure(message: "chattr +F failed: \(flagged.stderr)") }
            } catch {
                unmount(point)
                throw error
            }
            return point + "/ci"
        }
    }

    /// Tests/Support/casefold-fuse.py: a case-insensitive FUSE view of a folder kept in the given
    /// folder. It returns once the mount is in place and serves it in the background until unmounted.
    private static func casefoldFUSE() throws -> CaseInsensitiveMounter {
        let script = packageFile("Tests/Support/casefold-fuse.py").path
        // Debian's python, which has python3-fusepy; not whichever python3 comes first on the PATH.
        let python = "/usr/bin/python3"
        guard FileManager.default.isExecutableFile(atPath: python) else { throw ToolFailure(message: "needs \(python)") }
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else { throw ToolFailure(message: "needs /dev/fuse") }
        return { folder, point in
            let backing = folder + "/casefold-backing"
            try FileManager.default.createDirectory(atPath: backing, withIntermediateDirectories: true)
            let run = try runTool(python, [script, backing, point], deadline: TestDeadline.long)
            guard run.status == 0 else { throw ToolFailure(message: "\(script) failed: \(run.stderr)") }
            return point
        }
    }

    /// A trial mount: "Images" made in it must stat as the same folder under the name "images".
    private static func probe(_ mounter: CaseInsensitiveMounter) throws {
        let probe = FileManager.default.temporaryDirectory.appendingPathComponent("StashCaseProbe-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: probe + "/point", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        let folder = try mounter(probe, probe + "/point")
        defer { unmount(probe + "/point") }
        try FileManager.default.createDirectory(atPath: folder + "/Images", withIntermediateDirectories: false)
        var made = stat(), other = stat()
        guard stat(folder + "/Images", &made) == 0, stat(folder + "/images", &other) == 0 else {
            throw ToolFailure(message: "\"images\" does not name the folder \"Images\" (errno \(errno))")
        }
        guard made.st_dev == other.st_dev, made.st_ino == other.st_ino else {
            throw ToolFailure(message: "\"Images\" and \"images\" stat as different folders")
        }
    }

    /// Unmounts `point`; lazily if something still holds it open.
    static func unmount(_ point: String) {
        if (try? unmountTool([point])) == nil { _ = try? unmountTool(["-l", point]) }
    }

    private static func tool(_ name: String) -> String? {
        ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map { $0 + "/" + name }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// Mounts a case-insensitive file system in `directory` (the test fails when none can be), runs `body`
/// with the path of a case-insensitive folder in it, and unmounts it (also on failure).
private func withCaseInsensitiveMount(in directory: TemporaryDirectory, _ body: (String) throws -> Void) throws {
    let mounter = try Host.caseInsensitiveMount.get()
    let mountPoint = directory.path + "/ci"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    let folder = try mounter(directory.path, mountPoint)
    defer { Host.unmount(mountPoint) }
    try body(folder)
}

/// Mounts a tmpfs of `size` in `directory`, runs `body` with its path, and unmounts it (also on failure).
private func withTmpfs(size: String = "1m", in directory: TemporaryDirectory, _ body: (String) throws -> Void) throws {
    let mountPoint = directory.path + "/tmpfs"
    try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
    try mountTool(["-t", "tmpfs", "-o", "size=\(size),mode=0755", "tmpfs", mountPoint])
    defer {
        // With every mount below it; lazily if something still holds it open.
        if (try? unmountTool(["-R", mountPoint])) == nil { _ = try? unmountTool(["-R", "-l", mountPoint]) }
    }
    try body(mountPoint)
}

private func mountTool(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
    let run = try runTool(#require(Host.mount), arguments)
    try #require(run.status == 0, "mount \(arguments.joined(separator: " ")) failed: \(run.stderr)", sourceLocation: sourceLocation)
}

private func unmountTool(_ arguments: [String]) throws {
    let run = try runTool(#require(Host.umount), arguments)
    if run.status != 0 { throw ToolFailure(message: "umount \(arguments.joined(separator: " ")) failed: \(run.stderr)") }
}

private struct ToolFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Mounts a case-insensitive file system at a mount point (the second argument), keeping what it needs
/// in a folder (the first); returns the path of a case-insensitive folder in it.
private typealias CaseInsensitiveMounter = @Sendable (String, String) throws -> String

extension Result {
    /// Whether this holds a value.
    fileprivate var isAvailable: Bool { (try? get()) != nil }
}

// MARK: - Running tools and `stash`

private typealias ToolRun = ChildProcess.Run

/// Runs `executable` with an empty stdin. A process still running at `deadline` seconds is killed.
private func runTool(_ executable: String, _ arguments: [String], deadline: TimeInterval = TestDeadline.long) throws -> ToolRun {
    try ChildProcess.run(URL(fileURLWithPath: executable), arguments, deadline: deadline)
}

/// Runs the built `stash` as this user.
private func stash(_ arguments: [String], deadline: TimeInterval = TestDeadline.long) throws -> ToolRun {
    let executable = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
    return try runTool(executable.path, arguments, deadline: deadline)
}

/// Runs the built `stash --dir store` as `nobody`.
private func stashAsNobody(_ arguments: [String], store: String) throws -> ToolRun {
    let executable = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
    let setpriv = try #require(Host.setpriv)
    let nobody = try #require(Host.nobody)
    try #require(isReachableByOthers(executable.path), "nobody cannot run \(executable.path)")
    return try runTool(setpriv, ["--reuid=\(nobody.uid)", "--regid=\(nobody.gid)", "--clear-groups",
                                 executable.path, "--dir", store] + arguments)
}

/// A store folder in `directory` owned by `nobody`, with every parent traversable by it.
private func makeNobodyStore(in directory: TemporaryDirectory) throws -> String {
    let nobody = try #require(Host.nobody)
    try #require(chmod(directory.path, 0o755) == 0)
    try #require(isReachableByOthers(directory.path), "nobody cannot reach \(directory.path)")
    let store = directory.storePath()
    try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: false)
    try #require(chown(store, nobody.uid, nobody.gid) == 0)
    return store
}

/// Whether every folder from `/` to `path` lets other users through (and `path` itself read and run).
func isReachableByOthers(_ path: String) -> Bool {
    var url = URL(fileURLWithPath: path).resolvingSymlinksInPath()
    var info = stat()
    guard stat(url.path, &info) == 0, info.st_mode & 0o005 == 0o005 else { return false }
    while url.path != "/" {
        url.deleteLastPathComponent()
        guard stat(url.path, &info) == 0, info.st_mode & 0o001 != 0 else { return false }
    }
    return true
}

private func expectSuccess(_ run: ToolRun, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(run.status == 0, "stash failed: \(run.stderr)", sourceLocation: sourceLocation)
}

