import Foundation
import CStashMappedRead
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A segment file mapped read-only, so that a read copies its record out of memory instead of making
/// a `pread` (Docs/Architecture.md, "Reads from mapped segments").
///
/// What is read from it is trusted no more than a `pread`'s bytes: a read copies the record into a
/// buffer of its own first and verifies that copy (the record's checksum and key), so bytes another
/// program writes into the file meanwhile are `corrupted`, never a wrong answer. A file another
/// program cuts short underneath makes the pages past its new end fault: every copy runs under the
/// guard of `CStashMappedRead`, and a faulting copy fails (the caller then reads with `pread`, which
/// sees the short file) instead of ending the process.
///
/// Immutable once made; unmapped when the last reference goes, which the segment holds, and with it
/// every table of reads off the queue (a reader copies while holding its table): on a thread of its
/// own (``BackgroundRelease``), so that a closing store does not wait for it.
final class SegmentMapping: @unchecked Sendable {
    // @unchecked Sendable: immutable but for ``isOfRemovedFile``, which only the queue writes and only deinit reads.
    let base: UnsafeRawPointer
    /// The bytes mapped: the file's length when mapped, or more for a segment still growing (the
    /// pages past the file's end are reserved, and fault until the file reaches them).
    let length: Int

    /// Whether mapped reads can be used in this process (the fault handler is installed); asked once.
    private static let isAvailable = stash_mapped_read_prepare() == 0

    /// Maps `length` bytes of the file `fd`; nil where mapping is not possible or wise (a store in
    /// memory, an empty length, 32-bit pointers, the fault handler or `mmap` refused): reads then use `pread`.
    init?(fd: Int32, length: Int) {
        // Not where pointers are 32 bits (watchOS on arm64_32): the segments, and the room the one
        // appended to reserves, would take address space the app's own allocations need.
        guard MemoryLayout<Int>.size == 8, Self.isAvailable, length > 0, !MemoryVolume.isVirtual(fd) else { return nil }
        let address = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0)
        guard let address, address != MAP_FAILED else { return nil }
        (base, self.length) = (UnsafeRawPointer(address), length)
    }

    /// Whether its file was removed: the file's blocks are freed only once no mapping of it is left, and
    /// a removal on a full disk (``WritePath``'s `removeAll`) must leave the space free when it returns.
    /// Set on the store's queue before the last reference goes.
    var isOfRemovedFile = false

    deinit {
        let bytes = UnsafeMutableRawBufferPointer(start: UnsafeMutableRawPointer(mutating: base), count: length)
        if isOfRemovedFile { munmap(bytes.baseAddress, length) } else { BackgroundRelease.unmap(bytes) }
    }

    /// Copies the `bytes.count` bytes at `offset` into `bytes`; false if they are not all mapped, or
    /// the file is shorter than they are now (the copy faulted).
    @inline(__always)
    static func copy(from base: UnsafeRawPointer, length: Int, at offset: Int, into bytes: UnsafeMutableRawBufferPointer) -> Bool {
        guard offset >= 0, offset <= length, bytes.count <= length - offset, let destination = bytes.baseAddress else { return false }
        return stash_mapped_read(destination, base + offset, bytes.count) == 0
    }

    func copy(at offset: Int, into bytes: UnsafeMutableRawBufferPointer) -> Bool {
        Self.copy(from: base, length: length, at: offset, into: bytes)
    }
}
