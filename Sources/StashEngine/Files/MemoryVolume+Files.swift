import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The bytes of memory files: reads and writes at an offset or at the descriptor's position, their
// length, and what `fstat` says of them.

extension MemoryVolume {
    /// `pread`: up to `count` bytes from `offset` (fewer at the end, 0 past it).
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int) -> Int {
        guard let (file, open) = tables.withLock({ $0.file(fd) }), open.readable else { return Int(fail(EBADF)) }
        guard offset >= 0 else { return Int(fail(EINVAL)) }
        return file.read(into: buffer, count, at: offset)
    }

    /// `pwrite`: all of `count` bytes at `offset`, extending the file (zeros fill a gap).
    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, at offset: Int) -> Int {
        guard let (file, open) = tables.withLock({ $0.file(fd) }), open.writable else { return Int(fail(EBADF)) }
        guard offset >= 0 else { return Int(fail(EINVAL)) }
        file.write(bytes, count, at: offset)
        return count
    }

    /// `read`: from the descriptor's position on, which moves past what was read.
    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        guard let (file, open) = tables.withLock({ $0.file(fd) }), open.readable else { return Int(fail(EBADF)) }
        let done = file.read(into: buffer, count, at: open.position)
        tables.withLock { $0.open[fd]?.position = open.position + done }
        return done
    }

    /// `write`: at the descriptor's position, which moves past what was written.
    static func write(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        guard let (file, open) = tables.withLock({ $0.file(fd) }), open.writable else { return Int(fail(EBADF)) }
        file.write(bytes, count, at: open.position)
        tables.withLock { $0.open[fd]?.position = open.position + count }
        return count
    }

    /// `ftruncate`: cuts the file to `length` bytes, or extends it with zeros.
    static func truncate(_ fd: Int32, _ length: Int) -> Int32 {
        guard let (file, open) = tables.withLock({ $0.file(fd) }), open.writable else { return fail(EBADF) }
        guard length >= 0 else { return fail(EINVAL) }
        file.bytes.withLock { bytes in
            if length < bytes.count {
                bytes.removeSubrange(length...)
            } else {
                bytes.append(contentsOf: [UInt8](repeating: 0, count: length - bytes.count))
            }
        }
        return 0
    }

    /// `fstat` of a virtual descriptor: a regular file (its size, its count of names) or a folder (no
    /// names once removed); the inode of a folder is its serial number.
    static func status(_ fd: Int32, _ info: inout stat) -> Int32 {
        guard let (open, links) = tables.withLock({ tables in tables.open[fd].map { open in (open, Self.links(open.target)) } }) else {
            return fail(EBADF)
        }
        info = stat()
        switch open.target {
        case .folder(let folder):
            info.st_mode = S_IFDIR | 0o755
            info.st_ino = numericCast(folder.serial)
        case .file(let file):
            info.st_mode = S_IFREG | 0o644
            info.st_size = off_t(file.bytes.withLock { $0.count })
        }
        info.st_nlink = numericCast(links)
        return 0
    }

    /// `fstatat` of `name` in the folder open at `folderFD` (never a link: a memory folder has none).
    static func status(of name: String, inFolder folderFD: Int32, _ info: inout stat) -> Int32 {
        let found: Result<File, Errno> = tables.withLock { tables in
            guard let folder = tables.folder(folderFD) else { return .failure(Errno(EBADF)) }
            guard let file = folder.names[name] else { return .failure(Errno(ENOENT)) }
            return .success(file)
        }
        switch found {
        case .failure(let error):
            return fail(error.code)
        case .success(let file):
            info = stat()
            info.st_mode = S_IFREG | 0o644
            info.st_size = off_t(file.bytes.withLock { $0.count })
            info.st_nlink = 1
            return 0
        }
    }

    /// How many names `target` has (tables' lock held): 0 once unlinked or removed.
    private static func links(_ target: Open.Target) -> Int {
        switch target {
        case .folder(let folder): return folder.isRemoved ? 0 : 2
        case .file(let file): return file.links
        }
    }
}

extension MemoryVolume.File {
    /// Copies up to `count` bytes from `offset` into `buffer`; returns how many there were.
    func read(into buffer: UnsafeMutableRawPointer, _ count: Int, at offset: Int) -> Int {
        bytes.withLock { bytes in
            guard offset < bytes.count else { return 0 }
            let done = min(count, bytes.count - offset)
            bytes.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + offset, byteCount: done) }
            return done
        }
    }

    /// Puts `count` bytes at `offset`, growing the file as far as they reach (zeros before them if
    /// `offset` is past the end).
    func write(_ source: UnsafeRawPointer, _ count: Int, at offset: Int) {
        guard count > 0 else { return }
        let incoming = UnsafeRawBufferPointer(start: source, count: count)
        bytes.withLock { bytes in
            if offset > bytes.count { bytes.append(contentsOf: [UInt8](repeating: 0, count: offset - bytes.count)) }
            let overlap = min(count, bytes.count - offset)
            if overlap > 0 {
                bytes.withUnsafeMutableBytes { ($0.baseAddress! + offset).copyMemory(from: source, byteCount: overlap) }
            }
            // Rebased rather than sliced: a raw buffer appends as one copy of memory, a slice byte by byte.
            if overlap < count { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: incoming[overlap...])) }
        }
    }
}
