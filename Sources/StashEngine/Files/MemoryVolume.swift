import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Folders and files that live in this process's memory: what the engine of an in-memory store
/// (`Storage.inMemory`) reads and writes instead of a file system, as SQLite's `memdb` VFS does for
/// its in-memory databases. The engine is the same (segments, value files, key directory, marker,
/// compaction): only the two wrappers every file access goes through, ``FileIO`` and
/// ``FolderHandle``, send the calls for a memory folder here.
///
/// A memory folder is named by a path under ``root``; a memory file or folder open is a *virtual
/// descriptor*, a number below -1 (every real descriptor is 0 or more, and -1 is the error value),
/// so one integer compare tells the wrappers which side a call is for (``isVirtual(_:)``).
///
/// The calls have the system's shapes and rules (`open`, `pread`, `pwrite`, `fstat`, `unlinkat`,
/// `renameat`, …: a result of -1 sets `errno`), so the wrappers' loops and error handling stay the
/// same for both. POSIX rules the engine relies on hold: a write past the end extends the file and
/// zero-fills the gap, a rename replaces the name it goes to, an unlinked file stays readable
/// through the descriptors still open on it, a removed folder refuses new names. Syncs do nothing
/// (nothing here outlives the process), and the folder lock is always free (only this process can
/// see a memory folder, and its engine registry gives each folder one engine).
///
/// Locks: one for the tables (folders, names, descriptors; ``tables``), and one per file for its bytes
/// (value files are read off the store's queue, from any thread). Neither is held while the other is
/// taken.
package enum MemoryVolume {
    /// The path every memory folder is under. `/dev/null` is a character device on every POSIX
    /// system (POSIX requires it there), and a path through anything but a folder does not resolve
    /// (`ENOTDIR`): nothing can ever exist below it on disk, so no real path is ever mistaken for a
    /// memory one, and a memory path handed to the file system by mistake fails instead of creating
    /// anything. It also reads as what it is in a storage's `path` and in error messages.
    package static let root = "/dev/null/stash-in-memory"
    private static let rootPrefix = root + "/"

    /// Whether `fd` is a virtual descriptor (a memory file or folder) rather than the system's.
    @inline(__always)
    static func isVirtual(_ fd: Int32) -> Bool { fd < -1 }

    /// Whether `path` names a memory folder or a file in one.
    static func isMemoryPath(_ path: String) -> Bool { path.hasPrefix(rootPrefix) }

    /// A path for a new memory folder, unique in this process (nothing is created yet).
    package static func newFolderPath() -> String { rootPrefix + UUID().uuidString }

    // MARK: Tables

    /// A file: its bytes behind a lock of its own; its count of names under the tables' lock.
    final class File: @unchecked Sendable {
        // @unchecked Sendable: `bytes` is a lock; `links` is only touched under the tables' lock.
        let bytes = Locked<[UInt8]>([])
        var links = 1
    }

    /// A folder: the files its names stand for. Only touched under the tables' lock.
    final class Folder: @unchecked Sendable {
        // @unchecked Sendable: only touched under the tables' lock.
        let serial: UInt64
        var names: [String: File] = [:]
        var isRemoved = false
        init(serial: UInt64) { self.serial = serial }
    }

    /// What a virtual descriptor has open.
    struct Open {
        enum Target { case folder(Folder), file(File) }
        let target: Target
        let readable: Bool
        let writable: Bool
        /// Where `read` and `write` (without an offset) go on.
        var position = 0
    }

    struct Tables {
        var folders: [String: Folder] = [:]
        var open: [Int32: Open] = [:]
        /// Descriptors closed, handed out again before new ones (as the system does).
        var free: [Int32] = []
        var nextDescriptor: Int32 = -2
        var nextSerial: UInt64 = 1

        /// A descriptor for `open`, or `EMFILE` once every number below -1 is open.
        mutating func allocate(_ open: Open) -> Result<Int32, Errno> {
            let fd: Int32
            if let reused = free.popLast() {
                fd = reused
            } else {
                guard nextDescriptor > Int32.min else { return .failure(Errno(EMFILE)) }
                fd = nextDescriptor
                nextDescriptor -= 1
            }
            self.open[fd] = open
            return .success(fd)
        }

        func file(_ fd: Int32) -> (file: File, open: Open)? {
            guard let open = open[fd], case .file(let file) = open.target else { return nil }
            return (file, open)
        }

        func folder(_ fd: Int32) -> Folder? {
            guard let open = open[fd], case .folder(let folder) = open.target else { return nil }
            return folder
        }
    }

    static let tables = Locked(Tables())

    /// A failed call's `errno`.
    struct Errno: Error {
        let code: Int32
        init(_ code: Int32) { self.code = code }
    }

    /// Sets `errno` to `code`; returns -1, the system calls' failure.
    @inline(__always)
    static func fail(_ code: Int32) -> Int32 {
        errno = code
        return -1
    }

    // MARK: Folders

    /// Creates the folder `path` and those between it and ``root`` (`mkdir -p`).
    static func createFolder(_ path: String) -> Int32 {
        guard isMemoryPath(path) else { return fail(ENOENT) }
        tables.withLock { tables in
            var folder = path
            while folder.count > rootPrefix.count {
                if tables.folders[folder] == nil {
                    tables.folders[folder] = Folder(serial: tables.nextSerial)
                    tables.nextSerial += 1
                }
                folder = (folder as NSString).deletingLastPathComponent
            }
        }
        return 0
    }

    /// Removes the folder `path` and every folder below it, with their files: their memory goes once
    /// the last descriptor open on them is closed (at once, for a store whose engine closed first).
    package static func removeFolder(_ path: String) {
        let below = path + "/"
        tables.withLock { tables in
            for (name, folder) in tables.folders where name == path || name.hasPrefix(below) {
                for file in folder.names.values { file.links -= 1 }
                folder.names = [:]
                folder.isRemoved = true
                tables.folders[name] = nil
            }
        }
    }

    /// Whether the memory folder `path` exists.
    static func hasFolder(_ path: String) -> Bool {
        tables.withLock { $0.folders[path] != nil }
    }

    /// The names in the folder `path` (its files and the folders right below it); nil with `errno` set if there is none.
    static func list(_ path: String) -> [String]? {
        let below = path + "/"
        let names: [String]? = tables.withLock { tables in
            guard let folder = tables.folders[path] else { return nil }
            let subfolders = tables.folders.keys.filter { $0.hasPrefix(below) && !$0.dropFirst(below.count).contains("/") }
            return Array(folder.names.keys) + subfolders.map { String($0.dropFirst(below.count)) }
        }
        if names == nil { _ = fail(ENOENT) }
        return names
    }

    /// The identity of the folder open at `fd`: a serial number no other memory folder of this process has.
    static func identity(of fd: Int32) -> FolderIdentity? {
        tables.withLock { $0.folder(fd) }.map { FolderIdentity(memoryFolder: $0.serial) }
    }

    /// The identity of the memory folder at `path`, nil if there is none.
    static func identity(ofPath path: String) -> FolderIdentity? {
        tables.withLock { $0.folders[path] }.map { FolderIdentity(memoryFolder: $0.serial) }
    }

    // MARK: Opening and names

    /// `open`: the folder `path`, or the file `name` in the folder its path names.
    static func open(_ path: String, _ flags: Int32) -> Int32 {
        let split = (path as NSString)
        let result: Result<Int32, Errno> = tables.withLock { tables in
            if let folder = tables.folders[path] {
                if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL { return .failure(Errno(EEXIST)) }
                if flags & O_ACCMODE != O_RDONLY { return .failure(Errno(EISDIR)) }
                return tables.allocate(Open(target: .folder(folder), readable: true, writable: false))
            }
            if flags & O_DIRECTORY != 0 { return .failure(Errno(ENOENT)) }
            guard let folder = tables.folders[split.deletingLastPathComponent] else { return .failure(Errno(ENOENT)) }
            return open(split.lastPathComponent, in: folder, flags, &tables)
        }
        return finish(result)
    }

    /// `openat`: the file `name` in the folder open at `folderFD`.
    static func open(_ name: String, inFolder folderFD: Int32, _ flags: Int32) -> Int32 {
        let result: Result<Int32, Errno> = tables.withLock { tables in
            guard let folder = tables.folder(folderFD) else { return .failure(Errno(EBADF)) }
            return open(name, in: folder, flags, &tables)
        }
        return finish(result)
    }

    private static func open(_ name: String, in folder: Folder, _ flags: Int32, _ tables: inout Tables) -> Result<Int32, Errno> {
        guard !name.isEmpty, !name.contains("/"), name != ".", name != ".." else { return .failure(Errno(EINVAL)) }
        let file: File
        if let existing = folder.names[name] {
            if flags & (O_CREAT | O_EXCL) == O_CREAT | O_EXCL { return .failure(Errno(EEXIST)) }
            file = existing
        } else {
            guard flags & O_CREAT != 0, !folder.isRemoved else { return .failure(Errno(ENOENT)) }
            file = File()
            folder.names[name] = file
        }
        let mode = flags & O_ACCMODE
        let open = Open(target: .file(file), readable: mode != O_WRONLY, writable: mode != O_RDONLY)
        if flags & O_TRUNC != 0, open.writable { file.bytes.withLock { $0 = [] } }
        return tables.allocate(open)
    }

    private static func finish(_ result: Result<Int32, Errno>) -> Int32 {
        switch result {
        case .success(let fd): return fd
        case .failure(let error): return fail(error.code)
        }
    }

    /// `close`.
    static func close(_ fd: Int32) -> Int32 {
        let closed = tables.withLock { tables in
            guard tables.open.removeValue(forKey: fd) != nil else { return false }
            tables.free.append(fd)
            return true
        }
        return closed ? 0 : fail(EBADF)
    }

    /// `unlinkat` of the file `name` in the folder open at `folderFD`.
    static func unlink(_ name: String, inFolder folderFD: Int32) -> Int32 {
        let code: Int32 = tables.withLock { tables in
            guard let folder = tables.folder(folderFD) else { return EBADF }
            guard let file = folder.names.removeValue(forKey: name) else { return ENOENT }
            file.links -= 1
            return 0
        }
        return code == 0 ? 0 : fail(code)
    }

    /// `renameat` within the folder open at `folderFD`: `to` now names the file `from` named (a file
    /// `to` named loses that name).
    static func rename(_ from: String, _ to: String, inFolder folderFD: Int32) -> Int32 {
        let code: Int32 = tables.withLock { tables in
            guard let folder = tables.folder(folderFD) else { return EBADF }
            guard !to.isEmpty, !to.contains("/") else { return EINVAL }
            guard let file = folder.names[from] else { return ENOENT }
            guard from != to else { return 0 }
            folder.names[from] = nil
            if let replaced = folder.names.updateValue(file, forKey: to) { replaced.links -= 1 }
            return 0
        }
        return code == 0 ? 0 : fail(code)
    }
}
