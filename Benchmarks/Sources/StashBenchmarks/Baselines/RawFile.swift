import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The system calls that are the floor of a disk store: what the min store is made of, and the
/// baselines where a syscall alone is the floor (`stat` for existsObject, `unlink` for removal).
enum RawFile {
    struct Failure: Error, CustomStringConvertible {
        var call: String
        var path: String
        var code: Int32
        var description: String { "\(call)(\(path)): \(String(cString: strerror(code)))" }
    }

    /// The whole file: open, fstat (for the size), read, close.
    ///
    /// The buffer comes from malloc without zeroing and becomes the `Data` without a copy: the
    /// least a read into a `Data` can cost.
    static func readAll(_ path: String) throws -> Data {
        let fd = path.withCString { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw Failure(call: "open", path: path, code: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(call: "fstat", path: path, code: errno) }
        let size = Int(info.st_size)
        guard let buffer = malloc(max(size, 1)) else { throw Failure(call: "malloc", path: path, code: ENOMEM) }
        var offset = 0
        while offset < size {
            let count = read(fd, buffer + offset, size - offset)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                let code = errno
                free(buffer)
                throw Failure(call: "read", path: path, code: code)
            }
            if count == 0 { break }
            offset += count
        }
        return Data(bytesNoCopy: buffer, count: offset, deallocator: .free)
    }

    /// Writes `data` to `temporary`, then renames it over `path`: atomic, like Stash's writes.
    /// With `durable`, the file is fsynced before the rename and the folder after it.
    static func writeAtomically(_ data: Data, to path: String, temporary: String,
                                durable: Bool = false, directoryFD: Int32 = -1) throws {
        let fd = temporary.withCString { open($0, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw Failure(call: "open", path: temporary, code: errno) }
        var failure: Failure?
        data.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    failure = Failure(call: "write", path: temporary, code: errno)
                    return
                }
                offset += count
            }
        }
        if failure == nil, durable, fsync(fd) != 0 { failure = Failure(call: "fsync", path: temporary, code: errno) }
        if close(fd) != 0, failure == nil { failure = Failure(call: "close", path: temporary, code: errno) }
        if let failure { throw failure }
        guard rename(temporary, path) == 0 else { throw Failure(call: "rename", path: path, code: errno) }
        if durable, fsync(directoryFD) != 0 { throw Failure(call: "fsync", path: path, code: errno) }
    }

    /// Whether a file exists at `path`: one `stat`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Removes the file at `path`: one `unlink`.
    static func remove(_ path: String) throws {
        guard unlink(path) == 0 else { throw Failure(call: "unlink", path: path, code: errno) }
    }

    /// Bytes of the files directly in `directory`: their lengths, and the blocks they occupy.
    static func usage(of directory: String) throws -> (files: Int, bytes: Int, allocated: Int) {
        var result = (files: 0, bytes: 0, allocated: 0)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            var info = stat()
            guard stat(directory + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            result.files += 1
            result.bytes += Int(info.st_size)
            result.allocated += Int(info.st_blocks) * 512
        }
        return result
    }

    /// Bytes allocated (`st_blocks` × 512) to the regular files under `directory`, at any depth.
    static func allocated(under directory: String) throws -> Int {
        guard let walker = FileManager.default.enumerator(atPath: directory) else {
            throw Failure(call: "opendir", path: directory, code: ENOENT)
        }
        var total = 0
        while let name = walker.nextObject() as? String {
            var info = stat()
            guard lstat(directory + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            total += Int(info.st_blocks) * 512
        }
        return total
    }
}
