package import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An open store folder: the one descriptor through which a store creates, renames and removes its
/// files, and on which it holds its lock.
///
/// Every change to the folder's names goes through the descriptor (`openat`, `renameat`, `unlinkat`),
/// never through the path: once the folder is removed or replaced underneath (by this process or
/// another), such calls fail or act on the removed folder, so a store can never write into, or
/// delete from, whatever stands at its path later; it has to open that anew (``DiskStore/reopen()``).
/// The lock is an `flock` on the folder itself, not on a file in it: deleting a file cannot let a
/// second writer in, and a reader needs no file it could not create.
package final class FolderHandle: Sendable {
    package let path: String
    package let fd: Int32

    /// Opens the folder at `path` (following a symbolic link to it, as the user named it).
    package init(path: String) throws {
        self.path = path
        fd = try FileIO.open(path, O_RDONLY | O_DIRECTORY, followLinks: true)
    }

    deinit {
        _ = FileIO.close(fd) // closing releases the lock
    }

    /// Whether this is a folder of the memory volume (``MemoryVolume``), whose store has no files on disk.
    package var isInMemory: Bool { MemoryVolume.isVirtual(fd) }

    /// The device and inode of the folder: what identifies it, whatever path names it.
    package var identity: FolderIdentity? {
        if MemoryVolume.isVirtual(fd) { return MemoryVolume.identity(of: fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FolderIdentity(info)
    }

    /// Whether the folder was removed (it may since have been made anew at its path).
    var isRemoved: Bool {
        FileIO.isUnlinked(fd)
    }

    /// Whether `path` still names this very folder.
    var isAtPath: Bool {
        guard let identity, let current = FolderIdentity(path: path) else { return false }
        return identity == current
    }

    /// Tries to take the lock without waiting: exclusive for a writer, shared for a reader.
    func tryLock(exclusive: Bool) throws -> Bool {
        if MemoryVolume.isVirtual(fd) { return true } // only this process sees it, and its registry gives it one engine
        while true {
            if flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 { return true }
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw FileIO.error("flock", path)
        }
    }

    /// Releases the lock (the descriptor stays open for the files that still use it).
    package func unlock() {
        if MemoryVolume.isVirtual(fd) { return }
        flock(fd, LOCK_UN)
    }

    package func filePath(_ name: String) -> String { path + "/" + name }

    /// Opens `name` in this folder, never following a link planted there.
    package func open(_ name: String, _ flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        while true {
            let opened = MemoryVolume.isVirtual(fd) ? MemoryVolume.open(name, inFolder: fd, flags)
                : name.withCString { systemOpenAt(fd, $0, flags | O_CLOEXEC | O_NOFOLLOW, mode) }
            if opened != -1 { return opened } // a virtual descriptor is below -1
            if errno != EINTR { throw FileIO.error("open", filePath(name)) }
        }
    }

    /// Removes `name`; a missing file is not an error. An empty folder in a file's place (damage)
    /// is removed too.
    package func remove(_ name: String) throws {
        if unlink(name) == 0 || errno == ENOENT { return }
        let code = errno
        // Linux says EISDIR for a directory, Apple platforms EPERM.
        // (A memory folder holds files only: the volume never answers either.)
        if code == EISDIR || code == EPERM, !MemoryVolume.isVirtual(fd), unlinkat(fd, name, AT_REMOVEDIR) == 0 { return }
        throw FileIO.error("unlink", filePath(name), code: code)
    }

    package func rename(_ from: String, _ to: String) throws {
        let renamed = MemoryVolume.isVirtual(fd) ? MemoryVolume.rename(from, to, inFolder: fd) : renameat(fd, from, fd, to)
        if renamed != 0 { throw FileIO.error("rename", filePath(to)) }
    }

    /// `unlinkat` of the file `name`: 0, or -1 with `errno` set.
    private func unlink(_ name: String) -> Int32 {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.unlink(name, inFolder: fd) : unlinkat(fd, name, 0)
    }

    /// What `fstatat` says of `name` in this folder (not following a link); nil if nothing has the name.
    func status(of name: String) -> stat? {
        var info = stat()
        let found = MemoryVolume.isVirtual(fd) ? MemoryVolume.status(of: name, inFolder: fd, &info)
            : fstatat(fd, name, &info, AT_SYMLINK_NOFOLLOW)
        return found == 0 ? info : nil
    }

    /// Flushes the folder's names to stable storage. A file system that cannot sync folders
    /// (`EINVAL`, `ENOTSUP`) has nothing better to offer: no error.
    package func sync() throws {
        try FileIO.syncDirectory(fd, path)
    }

    /// Writes `data` to the new file `name` (unlinking a leftover of that name first), `fsync`ing it
    /// if `durable`.
    func writeFile(_ name: String, _ data: Data, durable: Bool) throws {
        try data.withUnsafeBytes { try writeFile(name, [$0], durable: durable) }
    }

    /// Writes `parts`, one after the other, to the new file `name`, as ``writeFile(_:_:durable:)-(_,Data,_)`` does.
    func writeFile(_ name: String, _ parts: [UnsafeRawBufferPointer], durable: Bool) throws {
        let file: Int32
        do {
            file = try open(name, O_WRONLY | O_CREAT | O_EXCL)
        } catch where FileIO.isErrno(error, .EEXIST) {
            try remove(name)
            file = try open(name, O_WRONLY | O_CREAT | O_EXCL)
        }
        do {
            for bytes in parts { try FileIO.writeAll(file, bytes, path: filePath(name)) }
            if durable { try FileIO.synchronize(file, filePath(name)) }
        } catch {
            _ = FileIO.close(file)
            _ = unlink(name)
            throw error
        }
        if FileIO.close(file) != 0 {
            let failure = FileIO.error("close", filePath(name))
            _ = unlink(name)
            throw failure
        }
    }

    /// Writes `data` as `name` atomically: under a temporary name, then renamed (both flushed when
    /// `durable`).
    func replaceFile(_ name: String, _ data: Data, durable: Bool) throws {
        try data.withUnsafeBytes { try replaceFile(name, [$0], durable: durable) }
    }

    /// Writes `parts`, one after the other, as `name` atomically, as ``replaceFile(_:_:durable:)-(_,Data,_)`` does.
    func replaceFile(_ name: String, _ parts: [UnsafeRawBufferPointer], durable: Bool) throws {
        try writeFile(name + ".tmp", parts, durable: durable)
        try lettingGo(of: name) { try rename(name + ".tmp", name) }
        if durable { try sync() }
    }

    /// A new file in this folder with no name (Linux's `O_TMPFILE`), open for reading and writing, for
    /// ``name(_:as:)`` to name once it is whole; nil where the system, the file system or a memory volume
    /// makes none, or names none (no `/proc`).
    func openUnnamedFile() -> Int32? {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        guard !MemoryVolume.isVirtual(fd), access("/proc/self/fd", F_OK) == 0 else { return nil }
        let unnamed: Int32 = 0o20000000 | O_DIRECTORY // O_TMPFILE, which Glibc's module leaves out
        while true {
            let opened = openat(fd, ".", unnamed | O_RDWR | O_CLOEXEC, 0o644)
            if opened >= 0 { return opened }
            if errno != EINTR { return nil }
        }
        #else
        return nil
        #endif
    }

    /// Gives the unnamed file `file` (``openUnnamedFile()``) the name `name`, atomically in place of the
    /// file that has it (linked under a temporary name, then renamed).
    func name(_ file: Int32, as name: String) throws {
        #if os(Linux)
        let temporary = name + ".tmp"
        try remove(temporary)
        let linked = "/proc/self/fd/\(file)".withCString { linkat(AT_FDCWD, $0, fd, temporary, AT_SYMLINK_FOLLOW) }
        guard linked == 0 else { throw FileIO.error("linkat", filePath(temporary)) }
        try lettingGo(of: name) { try rename(temporary, name) }
        #else
        throw FileIO.error("linkat", filePath(name), code: ENOTSUP)
        #endif
    }

    /// Runs `change` (a rename over `name`) holding a reference to the file `name` names now, if it is
    /// large, let go of on a thread of its own (``BackgroundRelease``): the system frees a file's pages
    /// when its last name and reference go, which for a key uses file of 23 MB on tmpfs took 5 ms of a
    /// store's close. (Linux: an `O_PATH` reference, which opens nothing; elsewhere the file goes where
    /// it goes.)
    private func lettingGo(of name: String, _ change: () throws -> Void) rethrows {
        #if os(Linux) && (arch(x86_64) || arch(arm64))
        let pathOnly: Int32 = 0o10000000 // O_PATH, which Glibc's module leaves out (it needs _GNU_SOURCE)
        var previous = MemoryVolume.isVirtual(fd) ? -1 : name.withCString { openat(fd, $0, pathOnly | O_CLOEXEC | O_NOFOLLOW) }
        if previous >= 0, let info = FileIO.fileStatus(previous), info.st_size < BackgroundRelease.minimumLength {
            FileIO.closeDescriptor(previous) // a small file is freed at once, where it goes
            previous = -1
        }
        defer { if previous >= 0 { BackgroundRelease.close(previous) } }
        #endif
        try change()
    }
}

/// What identifies a folder: its device and inode.
package struct FolderIdentity: Hashable, Sendable {
    package var device: UInt64
    var inode: UInt64
    /// A folder of the memory volume (``MemoryVolume``), numbered by `inode`: apart from every device
    /// number, so that no memory folder is ever taken for a folder on disk, whatever its numbers.
    var isInMemory = false

    package init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }

    /// The memory folder of serial number `serial`.
    init(memoryFolder serial: UInt64) {
        (device, inode, isInMemory) = (0, serial, true)
    }

    /// The identity of what `path` names now (following links), or nil if nothing does.
    package init?(path: String) {
        if MemoryVolume.isMemoryPath(path) {
            guard let identity = MemoryVolume.identity(ofPath: path) else { return nil }
            self = identity
            return
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}

private func systemOpenAt(_ dir: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    openat(dir, path, flags, mode)
}
