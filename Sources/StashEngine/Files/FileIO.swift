package import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The few POSIX calls the disk engine makes, each turning a failure into ``StorageError/io``.
///
/// POSIX rather than `Data.write`/`FileManager`: on Linux those `fsync` every write, which costs
/// a millisecond each; the engine decides itself when to `fsync` (``DiskConfig/durable``).
///
/// With ``FolderHandle``, the one place the engine's system calls are made: a call for a memory
/// folder (a path under ``MemoryVolume/root``, a virtual descriptor) goes to ``MemoryVolume`` instead,
/// decided by one compare of the descriptor (the path's prefix for the few calls that take a path).
package enum FileIO {
    /// The error for the current `errno`.
    package static func error(_ operation: String, _ path: String, code: Int32 = errno) -> StorageError {
        .io(operation: operation, path: path, underlying: POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO))
    }

    /// Whether `error` is an I/O error with the given `errno`.
    static func isErrno(_ error: any Error, _ code: POSIXErrorCode) -> Bool {
        if case StorageError.io(_, _, let underlying as POSIXError) = error { return underlying.code == code }
        return false
    }

    /// Opens a file of the store. Never follows a symbolic link: a link planted in the folder must
    /// not make the store read or write a file outside it.
    package static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644, followLinks: Bool = false) throws -> Int32 {
        let inMemory = MemoryVolume.isMemoryPath(path)
        while true {
            let fd = inMemory ? MemoryVolume.open(path, flags)
                : path.withCString { systemOpen($0, flags | O_CLOEXEC | (followLinks ? 0 : O_NOFOLLOW), mode) }
            if fd != -1 { return fd } // a virtual descriptor is below -1
            if errno != EINTR { throw error("open", path) }
        }
    }

    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw error("write", path)
            }
            offset += written
        }
    }

    /// Writes all of `bytes` at `offset` (`pwrite`), whatever the descriptor's position.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int, path: String) throws {
        var done = 0
        while done < bytes.count {
            let written = systemPwrite(fd, bytes.baseAddress! + done, bytes.count - done, offset + done)
            if written < 0 {
                if errno == EINTR { continue }
                throw error("write", path)
            }
            done += written
        }
    }

    /// Up to `count` bytes of the open file `fd` from `offset` (`pread`; fewer at its end).
    package static func read(_ fd: Int32, at offset: Int, count: Int, path: String) throws -> [UInt8] {
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, done in
            done = try read(fd, at: offset, into: UnsafeMutableRawBufferPointer(buffer), path: path)
        }
    }

    /// Fills `buffer` from `offset` on; returns how many bytes it read (fewer at the end of the file).
    package static func read(_ fd: Int32, at offset: Int, into buffer: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        var done = 0
        while done < buffer.count {
            let n = systemPread(fd, buffer.baseAddress! + done, buffer.count - done, offset + done)
            if n < 0 {
                if errno == EINTR { continue }
                throw error("pread", path)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// The whole content of the open file `fd`, read from its start; nil unless it is a regular file.
    package static func readAll(_ fd: Int32, path: String) throws -> [UInt8]? {
        let info = try status(fd, path)
        guard (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        var bytes = [UInt8]()
        var capacity = try memorySize(info, path) + 1
        while true {
            let start = bytes.count
            var failure: Int32 = 0
            let chunk = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                count = 0
                while count < buffer.count {
                    let n = systemPread(fd, buffer.baseAddress! + count, buffer.count - count, start + count)
                    if n < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    if n == 0 { return }
                    count += n
                }
            }
            if failure != 0 { throw error("read", path, code: failure) }
            if start == 0 { bytes = chunk } else { bytes.append(contentsOf: chunk) }
            if chunk.count < capacity { return bytes }
            capacity = max(capacity, 1 << 16)
        }
    }

    /// The whole content of the file at `path`, checked to be `expectedSize` bytes.
    /// - Throws: ``StorageError/corrupted(_:)`` for a link, a non-regular file or a wrong size.
    static func readFile(_ path: String, expectedSize: Int) throws -> Data {
        try readFile(path, expectedSize: expectedSize) { try open(path, $0) }
    }

    /// ``readFile(_:expectedSize:)`` of the file `name` in `folder`.
    static func readFile(_ name: String, in folder: FolderHandle, expectedSize: Int) throws -> Data {
        try readFile(folder.filePath(name), expectedSize: expectedSize) { try folder.open(name, $0) }
    }

    private static func readFile(_ path: String, expectedSize: Int, opening: (Int32) throws -> Int32) throws -> Data {
        let fd: Int32
        do {
            fd = try opening(O_RDONLY | O_NONBLOCK) // a FIFO planted here must not block the store
        } catch where isErrno(error, .ELOOP) {
            throw StorageError.corrupted("\(path) is a symbolic link, not a value file")
        }
        defer { close(fd) }
        let info = try status(fd, path)
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw StorageError.corrupted("\(path) is not a regular file") }
        guard Int64(info.st_size) == Int64(expectedSize) else {
            throw StorageError.corrupted("value file \(path) has \(info.st_size) bytes, the index says \(expectedSize)")
        }
        var data = Data(count: expectedSize)
        let read = try data.withUnsafeMutableBytes { buffer -> Int in
            var offset = 0
            while offset < buffer.count {
                let n = systemRead(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw error("read", path)
                }
                if n == 0 { break }
                offset += n
            }
            return offset
        }
        guard read == expectedSize else {
            throw StorageError.corrupted("value file \(path) ended after \(read) of \(expectedSize) bytes")
        }
        return data
    }

    /// The whole content of a small file, or nil if it does not exist.
    static func readWholeFile(_ path: String) throws -> [UInt8]? {
        let fd: Int32
        do { fd = try open(path, O_RDONLY | O_NONBLOCK) } catch where isErrno(error, .ENOENT) { return nil }
        defer { close(fd) }
        let info = try status(fd, path)
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw error("read", path, code: EISDIR)
        default: throw StorageError.corrupted("\(path) is not a regular file")
        }
        // Read straight into an array of the file's size plus one byte (to see the end at once), with
        // no zero-filling and no chunks to copy; the file may still grow meanwhile, so the array does.
        var bytes: [UInt8] = []
        var capacity = try memorySize(info, path) + 1
        while true {
            var (failure, atEnd): (Int32, Bool) = (0, false)
            let start = bytes.count
            let chunk = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                count = 0
                while count < buffer.count {
                    let n = systemRead(fd, buffer.baseAddress! + count, buffer.count - count)
                    if n < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    if n == 0 {
                        atEnd = true
                        return
                    }
                    count += n
                }
            }
            if failure != 0 { throw error("read", path, code: failure) }
            if start == 0 { bytes = chunk } else { bytes.append(contentsOf: chunk) }
            if atEnd { return bytes }
            capacity = max(capacity, 1 << 16)
        }
    }

    /// The size of the file `info` describes, as an `Int` that one more byte can be added to.
    /// - Throws: `EFBIG` for a file too large to read into memory here (past 2 GiB where `Int` has
    ///   32 bits), rather than trapping in the conversion.
    static func memorySize(_ info: stat, _ path: String) throws -> Int {
        guard let size = Int(exactly: info.st_size), size < Int.max else { throw error("read", path, code: EFBIG) }
        return size
    }

    package static func status(_ fd: Int32, _ path: String) throws -> stat {
        guard let info = fileStatus(fd) else { throw error("fstat", path) }
        return info
    }

    /// The size of the open file `fd`.
    package static func size(_ fd: Int32, path: String) throws -> Int {
        try FileNumber.size(try status(fd, path), path: path)
    }

    /// Closes `fd`, ignoring errors (a descriptor only read from).
    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    /// Flushes the folder open at `fd` to stable storage: the names created, renamed or removed in it.
    /// A file system that cannot sync folders (`EINVAL`, `ENOTSUP`) has nothing better to offer: no error.
    static func syncDirectory(_ fd: Int32, _ path: String) throws {
        if flushToStableStorage(fd) != 0, errno != EINVAL, errno != ENOTSUP { throw error("fsync", path) }
    }

    /// Flushes the open file `fd` to stable storage: every durable step (a segment's records, a value
    /// file, a key directory, the marker) ends here.
    static func synchronize(_ fd: Int32, _ path: String) throws {
        if flushToStableStorage(fd) != 0 { throw error("fsync", path) }
    }

    /// `fsync`, and on Apple platforms `fcntl(F_FULLFSYNC)`: there `fsync` only hands the data to the
    /// drive, which may keep it in its volatile cache, while `F_FULLFSYNC` also makes the drive write
    /// that cache out (SQLite's `fullfsync` does the same). A file system that cannot (some network
    /// and FAT volumes answer `ENOTSUP` or `EINVAL`) gets a plain `fsync`, as SQLite falls back too.
    /// Returns 0 or -1 with `errno` set, as `fsync` does.
    private static func flushToStableStorage(_ fd: Int32) -> Int32 {
        if MemoryVolume.isVirtual(fd) { return 0 } // nothing in memory outlives the process
        #if canImport(Darwin)
        if fcntl(fd, F_FULLFSYNC) != -1 { return 0 }
        #endif
        return fsync(fd)
    }

    /// Creates `path` and its parents if missing.
    /// - Throws: The POSIX cause (`EEXIST` when a file that is no folder has the path, `ENOTDIR`, `EACCES`, …).
    package static func createDirectory(_ path: String) throws {
        if MemoryVolume.isMemoryPath(path) {
            if MemoryVolume.createFolder(path) != 0 { throw error("mkdir", path) }
            return
        }
        if mkdir(path, 0o755) == 0 { return }
        switch errno {
        case EEXIST:
            var info = stat()
            if stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR { return }
            throw error("mkdir", path, code: EEXIST)
        case ENOENT:
            let parent = (path as NSString).deletingLastPathComponent
            guard !parent.isEmpty, parent != path else { throw error("mkdir", path) }
            try createDirectory(parent)
            if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
            throw error("mkdir", path)
        default:
            throw error("mkdir", path)
        }
    }

    /// The names in the folder at `path`.
    package static func listDirectory(_ path: String) throws -> [String] {
        if MemoryVolume.isMemoryPath(path) {
            guard let names = MemoryVolume.list(path) else { throw error("list", path) }
            return names
        }
        do {
            return try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw StorageError.io(operation: "list", path: path, underlying: error)
        }
    }
}

/// `open` under a name that ``FileIO/open(_:_:mode:followLinks:)`` does not hide.
private func systemOpen(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
