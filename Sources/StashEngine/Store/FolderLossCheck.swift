import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// When a write checks that the store's active segment is still linked into its folder
/// (``SegmentFile/isDetached``, an `fstat`): the folder-loss check of Contract item 10.
///
/// Nothing short of a system call can tell that a file was unlinked, and an `fstat` per write cost
/// ~0.4 µs, a tenth of a small write. So a write skips it when both hold:
/// - it follows the end of the previous write (a set's or a removal's, else the previous append's)
///   within ``quietGap`` (1 µs), too short for anything to have
///   removed the folder *between* the two writes: a removal is system calls, and the fastest, one
///   `unlink`, takes several microseconds (3.6 µs on ext4 here). A caller that removes the folder
///   (or another thread it waits for) and then writes always leaves a longer gap, and its write
///   finds the folder gone, as before;
/// - the last check was less than ``longestInterval`` (1 ms) ago.
///
/// What this gives up: a remover that runs *during* a stream of back-to-back writes, unsynchronised
/// with them (another process, another thread), is noticed by the first write more than 1 ms after
/// the last check, not by the very next one; the writes in between land in the unlinked segment and
/// go with the folder, as writes racing the removal could already with a check per write. Every
/// write that begins after a quiet gap, and every write a caller orders after its removal, checks.
/// The same `fstat` tells appends through a mapping how long the active segment is (another program
/// may have cut it: ``SegmentWriteWindow/noteFileLength(_:)``), with the same window.
///
/// The clock is `CLOCK_MONOTONIC` (a vDSO or commpage read, ~25 ns), not the store's injectable
/// clock: this is about how much time really passed, not about expiry.
package struct FolderLossCheck {
    /// A write this soon after the previous write ended skips the check (nanoseconds).
    static let quietGap: UInt64 = 1_000
    /// The longest a store writes without checking (nanoseconds).
    static let longestInterval: UInt64 = 1_000_000

    /// How often at most a writer that keeps the store to itself checks that its shared file is still at
    /// its name (nanoseconds): a deleted one costs readers a reopen per call until then, not a wrong answer.
    static let sharedFileInterval: UInt64 = 100_000_000

    private var checkedAt: UInt64 = 0
    private var sharedFileCheckedAt: UInt64 = 0
    private var appendedAt: UInt64 = 0
    /// Monotonic nanoseconds; replaced by tests.
    private let clock: @Sendable () -> UInt64

    package init(clock: @escaping @Sendable () -> UInt64 = { FolderLossCheck.monotonicNanoseconds() }) {
        self.clock = clock
    }

    /// Whether this write must check that the folder is still there (it then counts as done now), and
    /// whether the shared file is due for its check too: one clock read for both. The shared file's
    /// check counts as done only once made (``didCheckSharedFile()``): a write that finds its segment
    /// unlinked starts a new one instead, and the next check that finds the folder there makes it.
    mutating func due() -> (folder: Bool, sharedFile: Bool) {
        let now = clock()
        if now &- appendedAt < Self.quietGap, now &- checkedAt < Self.longestInterval { return (false, false) }
        checkedAt = now
        return (true, sharedFileCheckedAt == 0 || now &- sharedFileCheckedAt >= Self.sharedFileInterval)
    }

    /// Notes that the shared file was checked, at the time ``due()`` read.
    mutating func didCheckSharedFile() {
        sharedFileCheckedAt = checkedAt
    }

    /// Notes that an append just ended (the start of the next quiet gap); a set or a removal notes it
    /// again as it ends, so that the gap is the caller's time between two calls, not the rest of the
    /// first call too: still before the call returns, so a removal the caller makes after it falls
    /// inside the gap.
    mutating func didAppend() {
        appendedAt = clock()
    }

    /// Makes the next write check, whatever the time.
    package mutating func expire() {
        (checkedAt, appendedAt, sharedFileCheckedAt) = (0, 0, 0)
    }

    static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
