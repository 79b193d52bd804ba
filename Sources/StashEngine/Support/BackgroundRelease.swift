import Dispatch
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
/// meanwhile gives it back all the same. Small regions are released at once (a hop would cost more).
enum BackgroundRelease {
    private static let queue = DispatchQueue(label: "Stash.background-release", qos: .utility)
    /// Below this, memory is released where it is let go of.
    static let minimumLength = 1 << 20

    /// Memory no one will read again.
    private struct Region: @unchecked Sendable {
        // @unchecked Sendable: handed over whole; the thread that handed it over never reads it again.
        let bytes: UnsafeMutableRawBufferPointer
    }

    /// Unmaps `bytes`, a mapping (``SegmentMapping``, ``PageMemory``).
    static func unmap(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        guard bytes.count >= minimumLength else { return _ = munmap(base, bytes.count) }
        let region = Region(bytes: bytes)
        queue.async { _ = munmap(region.bytes.baseAddress, region.bytes.count) }
    }

    /// Deallocates `bytes`, memory of the allocator.
    static func deallocate(_ bytes: UnsafeMutableRawBufferPointer) {
        guard bytes.count >= minimumLength else { return bytes.deallocate() }
        let region = Region(bytes: bytes)
        queue.async { region.bytes.deallocate() }
    }

    /// Closes `fd`, the last reference to a file whose last name is gone (its pages are freed then).
    static func close(_ fd: Int32) {
        queue.async { FileIO.closeDescriptor(fd) }
    }

    /// Returns once everything handed over before is released (tests that count mappings).
    package static func finish() {
        queue.sync {}
    }
}
