import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Follower marks: how a process that follows the store (a reader with observers, a writer among several
// with observers) tells the writers how far it has read, without writing anything.
//
// Between two of its calls, a writer may start a segment, fill it, and then retire it (a `removeAll`
// empties the store, a compaction merges it away), or replace a value in a file. Those records and files
// are then the only account of changes the follower's observers must hear at its next call (Contract
// items 11 and 12). So a follower holds a shared byte-range lock on the shared file at one byte standing
// for the position it has read to (segment s, offset o: byte s × 2³¹ + o, past every byte the file holds);
// a writer that retires segment m first asks whether any lock lies below m × 2³¹ (a follower has not read
// all segments before m), and one that removes a value file, whether any lies at or below the position of
// the record that named it. If one does, the file is kept (``RetainedSegments``). A lock dies with its
// process, so a killed follower holds nothing back; one that stays open without calling holds back what
// was retired after its last call, as an open SQLite read transaction holds back a WAL checkpoint.
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
    /// The byte of the marks that stands for position (`segment`, `offset`): offsets past 2³¹ − 1 count
    /// as that (segments are far shorter), so the bytes of one segment stay below the next's.
    static func markByte(segment: UInt32, offset: Int) -> Int64 {
        Int64(segment) << 31 | Int64(min(max(offset, 0), Int(Int32.max)))
    }

    /// Marks (`segment`, `offset`) as the position this process has read to (nil: it needs nothing
    /// kept). The new mark is taken before the old one goes, so that no moment is unmarked. A file
    /// system without byte-range locks leaves the process unmarked: what a writer retires then goes at
    /// once, as it did before marks.
    func markFollowed(_ position: (segment: UInt32, offset: Int)?) {
        let byte = position.map { Self.markByte(segment: $0.segment, offset: $0.offset) }
        guard byte != markedByte else { return }
        if let byte, !lock(Int16(F_RDLCK), at: byte) { return }
        if let old = markedByte { _ = lock(Int16(F_UNLCK), at: old) }
        markedByte = byte
    }

    /// Whether a process that follows the store has not read every segment before `id`, and so may
    /// still have to read segment `id`.
    func isNeededByFollowers(segment id: UInt32) -> Bool {
        hasMark(below: Self.markByte(segment: id, offset: 0))
    }

    /// Whether a process that follows the store has not read past the record at (`segment`, `offset`).
    func isNeededByFollowers(recordAt segment: UInt32, offset: Int) -> Bool {
        hasMark(below: Self.markByte(segment: segment, offset: offset) + 1)
    }

    /// Whether any process holds a mark below `byte`. False when the file system cannot tell (no
    /// byte-range locks): nothing is kept then, as before marks, rather than kept for ever.
    private func hasMark(below byte: Int64) -> Bool {
        let first = Self.markByte(segment: 1, offset: 0) // segments are numbered from 1
        guard byte > first, let lockCommands else { return false }
        var query = flock()
        query.l_type = Int16(F_WRLCK)
        query.l_whence = Int16(SEEK_SET)
        query.l_start = off_t(first)
        query.l_len = off_t(byte - first)
        while fcntl(fd, lockCommands.get, &query) != 0 {
            if errno != EINTR { return false }
        }
        return query.l_type != Int16(F_UNLCK)
    }

    private func lock(_ type: Int16, at byte: Int64) -> Bool {
        guard let lockCommands else { return false }
        var request = flock()
        request.l_type = type
        request.l_whence = Int16(SEEK_SET)
        request.l_start = off_t(byte)
        request.l_len = 1
        while fcntl(fd, lockCommands.set, &request) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }
}
