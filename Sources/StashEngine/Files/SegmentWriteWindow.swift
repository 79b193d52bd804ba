import Foundation
import CStashMappedRead
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The active segment mapped for writing, so that an append copies its records into the file's pages
/// instead of making a `pwrite` (Docs/Architecture.md, "Appends into a mapped segment").
///
/// What a process's crash leaves is what a `pwrite` leaves: the mapping is shared, so a record copied
/// into it is in the system's cache of the file the moment the copy ends, as a `pwrite`'s bytes are,
/// and is written back as they are (`fsync` writes a shared mapping's pages too). What differs is the
/// file's length: pages past a file's end cannot be written through a mapping, so the file is grown
/// ahead of the appends (by as much as it holds, 16 KiB to 1 MiB at a time), with the blocks reserved (`posix_fallocate`): a full
/// disk is then an error of that call, never a fault in the copy. The file's last bytes are zeros
/// until records fill them; the store cuts them off when the segment is sealed and when it closes,
/// and an open takes the zeros a crash left for the end of the records (Docs/Format.md, "Room
/// reserved for appends").
///
/// Linux only: there a shared mapping and `pwrite` see the same pages, and `fsync` writes a mapping's
/// changes. Elsewhere appends are `pwrite`s.
final class SegmentWriteWindow {
    private let fd: Int32
    private let base: UnsafeMutableRawPointer
    /// The bytes mapped: as many as the segment can ever hold (``SegmentLog``'s limit and one record).
    private let length: Int
    /// The file's length: where the reserved room ends.
    private var reservedEnd: Int
    /// The least and the most the file grows by at a time: as much again as it holds, within these,
    /// so that a small store's segment takes little more room than its records and a large one
    /// reserves (one system call) for thousands of appends at a time.
    static let growth = (least: 16 << 10, most: 1 << 20)

    /// Maps `length` bytes of the writable file `fd`, whose records end at `fileLength` (its length
    /// now); nil where appends are not mapped (not Linux, a store in memory, the fault handler or
    /// `mmap` refused).
    init?(fd: Int32, fileLength: Int, length: Int) {
        #if os(Linux)
        guard MemoryLayout<Int>.size == 8, stash_mapped_read_prepare() == 0, length >= fileLength, !MemoryVolume.isVirtual(fd) else { return nil }
        let address = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
        guard let address, address != MAP_FAILED else { return nil }
        (self.fd, base, self.length, reservedEnd) = (fd, address, length, fileLength)
        #else
        return nil
        #endif
    }

    /// Unmapped on the release thread (``BackgroundRelease``): a closing store's active segment has
    /// every page its appends touched mapped (8 ms of a close after filling a million entries).
    deinit {
        BackgroundRelease.unmap(UnsafeMutableRawBufferPointer(start: base, count: length))
    }

    /// Copies `bytes` into the file at `offset` (the end of its records), growing the file first where
    /// they reach past it; false if it did not (no room could be reserved, they reach past the
    /// mapping, or the copy faulted: the file was cut short underneath): the caller then writes them
    /// with `pwrite`, whose error says why. Bytes a faulting copy wrote before it faulted lie past the
    /// records' end, where the `pwrite` writes over them.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Bool {
        guard let source = bytes.baseAddress, offset >= 0, bytes.count <= length - offset else { return false }
        let end = offset + bytes.count
        if end > reservedEnd {
            #if os(Linux)
            let step = min(max(end, Self.growth.least), Self.growth.most)
            let newEnd = min(length, (end + step + 4095) / 4096 * 4096)
            guard posix_fallocate(fd, off_t(reservedEnd), off_t(newEnd - reservedEnd)) == 0 else { return false }
            reservedEnd = newEnd
            #else
            return false
            #endif
        }
        return stash_mapped_write(base + offset, source, bytes.count) == 0
    }

    /// Notes the file's length as the folder-loss check's `fstat` found it (``SegmentFile/isDetached``).
    /// Shorter than the room reserved, another program cut the file, and the next copy past its new end
    /// grows it first. That matters even inside a page: a copy past a file's end on its last page does
    /// not fault, yet its bytes are not the file's (the page's writeback or the file's growth zeroes
    /// them). So the room is believed only as long as the folder-loss check believes the folder
    /// (``FolderLossCheck``: a write after a quiet gap, and at least every millisecond, checks).
    func noteFileLength(_ fileLength: Int) {
        reservedEnd = min(reservedEnd, fileLength)
    }
}
