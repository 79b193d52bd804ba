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
        close(fd) // closing releases the lock
    }

    /// The device and inode of the folder: what identifies it, whatever path names it.
    package var identity: FolderIdentity? {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        return FolderIdentity(info)
    }

    /// Whether the folder was removed (it may since have been made anew at its path).
    var isRemoved: Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_nlink == 0
    }

    /// Whether `path` still names this very folder.
    var isAtPath: Bool {
        guard let identity, let current = FolderIdentity(path: path) else { return false }
        return identity == current
    }

    /// Tries to take the lock without waiting: exclusive for a writer, shared for a reader.
    func tryLock(exclusive: Bool) throws -> Bool {
        while true {
            if flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0 { return true }
            if errno == EINTR { continue }
            if errno == EWOULDBLOCK { return false }
            throw FileIO.error("flock", path)
        }
    }

    /// Releases the lock (the descriptor stays open for the files that still use it).
    package func unlock() {
        flock(fd, LOCK_UN)
    }

    package func filePath(_ name: String) -> String { path + "/" + name }

    /// Opens `name` in this folder, never following a link planted there.
    package func open(_ name: String, _ flags: Int32, mode: mode_t = 0o644) throws -> Int32 {
        while true {
            let opened = name.withCString { systemOpenAt(fd, $0, flags | O_CLOEXEC | O_NOFOLLOW, mode) }
            if opened >= 0 { return opened }
            if errno != EINTR { throw FileIO.error("open", filePath(name)) }
        }
    }

    /// Removes `name`; a missing file is not an error. An empty folder in a file's place (damage)
    /// is removed too.
    package func remove(_ name: String) throws {
        if unlinkat(fd, name, 0) == 0 || errno == ENOENT { return }
        let code = errno
        // Linux says EISDIR for a directory, Apple platforms EPERM.
        if code == EISDIR || code == EPERM, unlinkat(fd, name, AT_REMOVEDIR) == 0 { return }
        throw FileIO.error("unlink", filePath(name), code: code)
    }

    package func rename(_ from: String, _ to: String) throws {
        if renameat(fd, from, fd, to) != 0 { throw FileIO.error("rename", filePath(to)) }
    }

    /// Flushes the folder's names to stable storage. A file system that cannot sync folders
    /// (`EINVAL`, `ENOTSUP`) has nothing better to offer: no error.
    package func sync() throws {
        try FileIO.syncDirectory(fd, path)
    }

    /// Writes `data` to the new file `name` (unlinking a leftover of that name first), `fsync`ing it
    /// if `durable`.
    func writeFile(_ name: String, _ data: Data, durable: Bool) throws {
        try data.withUnsafeBytes { try writeFile(name, $0, durable: durable) }
    }

    /// Writes `bytes` to the new file `name`, as ``writeFile(_:_:durable:)-(_,Data,_)`` does.
    func writeFile(_ name: String, _ bytes: UnsafeRawBufferPointer, durable: Bool) throws {
        let file: Int32
        do {
            file = try open(name, O_WRONLY | O_CREAT | O_EXCL)
        } catch where FileIO.isErrno(error, .EEXIST) {
            try remove(name)
            file = try open(name, O_WRONLY | O_CREAT | O_EXCL)
        }
        do {
            try FileIO.writeAll(file, bytes, path: filePath(name))
            if durable { try FileIO.synchronize(file, filePath(name)) }
        } catch {
            close(file)
            unlinkat(fd, name, 0)
            throw error
        }
        if close(file) != 0 {
            let failure = FileIO.error("close", filePath(name))
            unlinkat(fd, name, 0)
            throw failure
        }
    }

    /// Writes `data` as `name` atomically: under a temporary name, then renamed (both flushed when
    /// `durable`).
    func replaceFile(_ name: String, _ data: Data, durable: Bool) throws {
        try data.withUnsafeBytes { try replaceFile(name, $0, durable: durable) }
    }

    /// Writes `bytes` as `name` atomically, as ``replaceFile(_:_:durable:)-(_,Data,_)`` does.
    func replaceFile(_ name: String, _ bytes: UnsafeRawBufferPointer, durable: Bool) throws {
        try writeFile(name + ".tmp", bytes, durable: durable)
        try rename(name + ".tmp", name)
        if durable { try sync() }
    }
}

/// What identifies a folder: its device and inode.
package struct FolderIdentity: Hashable, Sendable {
    package var device: UInt64
    var inode: UInt64

    package init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }

    /// The identity of what `path` names now (following links), or nil if nothing does.
    package init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}

private func systemOpenAt(_ dir: Int32, _ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
    openat(dir, path, flags, mode)
}
