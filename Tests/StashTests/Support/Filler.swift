import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file that takes the free space of its file system, so that a test meets a full disk
/// (``fill(leavingFreePages:)``), and gives it back (``free()``).
///
/// Removing the file alone does not free its space while a descriptor of it is still open: a file
/// system frees an unlinked file's blocks with its last descriptor. A child process that another test
/// spawns while the filler is open holds a copy of every descriptor from its `fork` until it closes
/// them before its `exec`, and a loaded machine can delay that past the removal: in a full CI run the
/// write made once the filler was removed found the disk still full (`ENOSPC` on a value file). So the
/// filler keeps a descriptor of its own open until it goes away, and every run meets that case; ``free()``
/// cuts the file to nothing before removing it, which frees its blocks whoever holds it open.
final class Filler {
    let path: String
    /// The descriptor held open as a child spawned meanwhile holds it (-1 while the file is not there).
    private var held: Int32 = -1

    init(_ path: String) {
        self.path = path
    }

    deinit {
        if held >= 0 { close(held) }
    }

    /// Writes the file until its file system is full, then frees `pages` pages of it again.
    func fill(leavingFreePages pages: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(fd >= 0, "cannot create \(path)", sourceLocation: sourceLocation)
        defer { close(fd) }
        if held < 0 { held = open(path, O_RDONLY) }
        let chunk = [UInt8](repeating: 0xEE, count: 16 * pageSize)
        var total = 0
        while true {
            let written = chunk.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) }
            if written < 0 {
                let code = errno
                if code == EINTR { continue }
                try #require(code == ENOSPC, "filling up failed with errno \(code)", sourceLocation: sourceLocation)
                break
            }
            total += written
            try #require(total < 64 << 20, "the file system never filled up", sourceLocation: sourceLocation)
        }
        try #require(total >= pages * pageSize, sourceLocation: sourceLocation)
        try #require(ftruncate(fd, off_t(total - pages * pageSize)) == 0, sourceLocation: sourceLocation)
    }

    /// Gives the space back: the file cut to nothing (its blocks freed at once, whoever holds it
    /// open), then removed.
    func free(sourceLocation: SourceLocation = #_sourceLocation) throws {
        try #require(truncate(path, 0) == 0, "cannot truncate \(path): errno \(errno)", sourceLocation: sourceLocation)
        try FileManager.default.removeItem(atPath: path)
    }
}
