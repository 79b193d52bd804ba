import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Large memory a store lets go of (its segments' mappings, its key directory's memory, a file it
/// replaced), released on a thread of its own rather than on the thread that lets go of it: that thread is often closing the
/// store, and at a million entries giving back what a process that read every key touched took
/// 35–50 ms of the close (`perf`: the kernel tearing down one page-table entry per 4 KiB page, and
/// freeing the directory's pages). Redis frees large values the same way (`lazyfree`), for the
/// same reason. Nothing waits for it: no one reads the memory any more, and a process that exits
/// meanwhile gives it back all the same. Small regions are released at once (a hop would cost more),
/// and so is any region while ``pendingLimit`` bytes wait already: a process that lets go of memory
/// faster than this thread gives it back does not pile it up.
enum BackgroundRelease {
    private static let queue = DispatchQueue(label: "Stash.background-release", qos: .utility)
    /// Below this, memory is released where it is let go of.
    static let minimumLength = 1 << 20
    /// At most this many bytes (of address space: at most that much memory) wait to be released: an
    /// eighth of the machine's memory, and no more than 4 GiB.
    static let pendingLimit = Int(min(UInt64(4) << 30, ProcessInfo.processInfo.physicalMemory / 8))
    private static let pending = Locked(0)

    /// Runs `release` (of `length` bytes) on the release thread, or here if it is small or too much waits already.
    private static func release(length: Int, _ release: @escaping @Sendable () -> Void) {
        let queued = length >= minimumLength && pending.withLock { waiting in
            guard waiting + length <= pendingLimit else { return false }
            waiting += length
            return true
        }
        guard queued else { return release() }
        queue.async {
            release()
            pending.withLock { $0 -= length }
        }
    }

    /// Memory no one will read again.
    private struct Region: @unchecked Sendable {
        // @unchecked Sendable: handed over whole; the thread that handed it over never reads it again.
        let bytes: UnsafeMutableRawBufferPointer
    }

    /// Unmaps `bytes`, a mapping (``SegmentMapping``, ``PageMemory``).
    static func unmap(_ bytes: UnsafeMutableRawBufferPointer) {
        guard bytes.baseAddress != nil else { return }
        let region = Region(bytes: bytes)
        release(length: bytes.count) { _ = munmap(region.bytes.baseAddress, region.bytes.count) }
    }

    /// Deallocates `bytes`, memory of the allocator.
    static func deallocate(_ bytes: UnsafeMutableRawBufferPointer) {
        let region = Region(bytes: bytes)
        release(length: bytes.count) { region.bytes.deallocate() }
    }

    /// Lets go of `object`, which holds about `length` bytes in many small allocations (a store's index:
    /// a key each), on the release thread: its last reference goes there, and its memory with it.
    static func letGo(of object: some AnyObject & Sendable, length: Int) {
        release(length: length) { withExtendedLifetime(object) {} }
    }

    /// Closes `fd`, the last reference to a file whose last name is gone (its pages are freed then).
    static func close(_ fd: Int32) {
        queue.async { FileIO.closeDescriptor(fd) }
    }

    /// Returns once everything handed over before is released (tests that count mappings).
    package static func finish() {
        queue.sync {}
    }

    /// Runs `body` with nothing released on the release thread meanwhile (tests of what must be released
    /// where it is let go of: a removed file's space).
    package static func holdingReleases<Result>(_ body: () throws -> Result) rethrows -> Result {
        queue.suspend()
        defer { queue.resume() }
        return try body()
    }
}
