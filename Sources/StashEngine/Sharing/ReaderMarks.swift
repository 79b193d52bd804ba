import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Follower marks: how a process that follows the store (a reader with observers, a writer among several
// with observers) tells the writers which segments it may still have to read, without writing anything.
//
// Between two of its calls, a writer may start a segment, fill it, and then retire it (a `removeAll`
// empties the store, a compaction merges it away). Its records are then the only account of those
// changes, which the follower's observers must hear at its next call (Contract items 11 and 12). So a
// follower holds a shared byte-range lock on the shared file at `marksStart + n`, n being the segment it
// has read up to (and holds open: a segment it follows stays readable once deleted); a writer that
// retires segment m first asks whether any lock lies in `marksStart ..< marksStart + m`: if one does, a
// follower has not read m yet, and the file stays (``RetainedSegments``). A lock dies with its process,
// so a killed follower holds nothing back; one that stays open without calling holds back what was
// retired after its last call, as an open SQLite read transaction holds back a WAL checkpoint.
//
// Linux only: open file description locks (`F_OFD_SETLK`), owned by this very descriptor, so that
// another descriptor of the file opened and closed by the process (a probe of the shared file) never
// drops the mark, and a writer among several never finds its own. Elsewhere there are no marks, and
// writers keep nothing (as before marks): Apple's systems have no public OFD locks; their POSIX locks go
// with any close of the file by the process, and on BSD systems `flock` locks (a sole writer holds one on
// this file for its life) and `fcntl` ones meet in one list, so a writer would find its own lock and
// keep every segment it retires.

#if os(Linux) || os(Android)
/// `F_OFD_GETLK` and `F_OFD_SETLK` (Linux 3.15 on; the C library's headers define them only under
/// `_GNU_SOURCE`, which Swift's import does not set).
private let lockCommands: (get: Int32, set: Int32)? = (36, 37)
#else
private let lockCommands: (get: Int32, set: Int32)? = nil
#endif

extension SharedState {
    /// Byte `marksStart + n` stands for segment n: past every byte the file holds (a lock needs none
    /// there), so a mark never covers a byte anyone reads or writes.
    static let marksStart: Int64 = 1 << 32

    /// Marks `segment` as the one this process has read up to (nil: it needs nothing kept). The new mark
    /// is taken before the old one goes, so that no moment is unmarked. A file system without byte-range
    /// locks leaves the process unmarked: what a writer retires then goes at once, as it did before marks.
    func markFollowed(_ segment: UInt32?) {
        guard segment != markedSegment else { return }
        if let segment, !lock(Int16(F_RDLCK), segment) { return }
        if let old = markedSegment { _ = lock(Int16(F_UNLCK), old) }
        markedSegment = segment
    }

    /// Whether a process that follows the store has read only up to a segment older than `id`, and so
    /// may still have to read segment `id`. False when the file system cannot tell (no byte-range locks):
    /// nothing is kept then, as before marks, rather than kept for ever.
    func isNeededByFollowers(_ id: UInt32) -> Bool {
        guard id > 0, let lockCommands else { return false }
        var query = flock()
        query.l_type = Int16(F_WRLCK)
        query.l_whence = Int16(SEEK_SET)
        query.l_start = off_t(Self.marksStart)
        query.l_len = off_t(id)
        while fcntl(fd, lockCommands.get, &query) != 0 {
            if errno != EINTR { return false }
        }
        return query.l_type != Int16(F_UNLCK)
    }

    private func lock(_ type: Int16, _ segment: UInt32) -> Bool {
        guard let lockCommands else { return false }
        var request = flock()
        request.l_type = type
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(Self.marksStart + Int64(segment))
        request.l_len = 1
        while fcntl(fd, lockCommands.set, &request) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }
}
