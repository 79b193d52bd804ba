import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The system calls on a descriptor, each sending a virtual one (a memory file or folder) to the
// memory volume: one compare of the descriptor, inlined, and nothing else on the disk path. They keep
// the system's contract (-1 and `errno` on failure), so their callers' loops serve both.

extension FileIO {
    /// What `fstat` says of the open file `fd`; nil (with `errno` set) if it cannot say.
    static func fileStatus(_ fd: Int32) -> stat? {
        var info = stat()
        let found = MemoryVolume.isVirtual(fd) ? MemoryVolume.status(fd, &info) : fstat(fd, &info)
        return found == 0 ? info : nil
    }

    /// `close`: 0, or -1 with `errno` set.
    @discardableResult
    static func close(_ fd: Int32) -> Int32 {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.close(fd) : posixClose(fd)
    }

    /// `ftruncate`: 0, or -1 with `errno` set.
    static func truncate(_ fd: Int32, to length: Int) -> Int32 {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.truncate(fd, length) : ftruncate(fd, off_t(length))
    }

    /// Whether the file or folder open at `fd` has no name any more (unlinked, or its folder removed).
    static func isUnlinked(_ fd: Int32) -> Bool {
        fileStatus(fd).map { $0.st_nlink == 0 } ?? false
    }

    @inline(__always)
    static func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.read(fd, buffer, count) : posixRead(fd, buffer, count)
    }

    @inline(__always)
    static func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.write(fd, buffer, count) : posixWrite(fd, buffer, count)
    }

    @inline(__always)
    static func systemPread(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int, _ offset: Int) -> Int {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.read(fd, buffer, count, at: offset) : pread(fd, buffer, count, off_t(offset))
    }

    @inline(__always)
    static func systemPwrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ offset: Int) -> Int {
        MemoryVolume.isVirtual(fd) ? MemoryVolume.write(fd, bytes, count, at: offset) : pwrite(fd, bytes, count, off_t(offset))
    }
}

// The system's calls under names that FileIO's own do not hide.
private func posixClose(_ fd: Int32) -> Int32 { close(fd) }
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int { read(fd, buffer, count) }
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(fd, buffer, count) }
