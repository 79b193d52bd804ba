#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Memory for a whole key directory (~110 MB at a million entries), asked for in huge pages where the
/// system gives them on request (Linux's transparent huge pages in `madvise` mode).
///
/// Reading a directory into fresh memory faults that memory in a 4 KiB page at a time: ~27,000 faults
/// at a million entries, each clearing its page, were more of an open's time than the copy itself
/// (`perf`: the kernel's copy loop, page clearing and fault handling). In 2 MiB pages the same read
/// takes about half as long here (a C harness, 110 MB on tmpfs), and writing a directory, which places
/// each entry at random in the table, misses the TLB less. Advice only: where it is not taken (another
/// mode, another system), nothing changes.
enum HugePages {
    /// Below this, a buffer is left as it is: a few huge pages are not worth a system call.
    static let minimumLength = 8 << 20

    /// New memory of `byteCount` bytes (8-byte aligned, uninitialized), advised for huge pages when
    /// large; released with `deallocate()` as usual.
    static func allocate(byteCount: Int) -> UnsafeMutableRawBufferPointer {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: byteCount, alignment: 8)
        #if os(Linux)
        guard byteCount >= minimumLength, let base = bytes.baseAddress else { return bytes }
        // Only whole huge pages inside the buffer: the allocator's own bytes around it are left alone.
        let huge = 2 << 20
        let start = (Int(bitPattern: base) + huge - 1) & ~(huge - 1)
        let end = (Int(bitPattern: base) + byteCount) & ~(huge - 1)
        if end > start, let first = UnsafeMutableRawPointer(bitPattern: start) {
            _ = madvise(first, end - start, MADV_HUGEPAGE)
        }
        #endif
        return bytes
    }
}

/// Memory straight from the system (an anonymous private mapping), not from the allocator: a key
/// directory read a page at a time (``LoadedDirectory``) takes its file's length of it at open, and only
/// the pages read are ever resident. From the allocator, the whole length counted as heap in use, and
/// was released through it.
enum PageMemory {
    /// `byteCount` bytes of zeroed pages, nil if the system refuses them; released with ``release(_:)``.
    static func allocate(byteCount: Int) -> UnsafeMutableRawBufferPointer? {
        #if canImport(Darwin)
        let anonymous = MAP_ANON
        #else
        let anonymous = MAP_ANONYMOUS
        #endif
        guard byteCount > 0, let address = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | anonymous, -1, 0),
              address != MAP_FAILED else { return nil }
        return UnsafeMutableRawBufferPointer(start: address, count: byteCount)
    }

    /// Gives `bytes` back (on a thread of its own where large, ``BackgroundRelease``).
    static func release(_ bytes: UnsafeMutableRawBufferPointer) {
        BackgroundRelease.unmap(bytes)
    }
}
