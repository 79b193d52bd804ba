/// Where a record may start and end in a segment, computed in 64 bits.
///
/// Records are located by 32-bit offsets (``DiskRecord/offset``), so a segment ends before 4 GiB. The
/// sums that decide whether one more record fits are done in `Int64`: in `Int` they would overflow (and
/// trap) from 2 GiB on where `Int` has 32 bits (Apple Watch's arm64_32), long before 4 GiB. There a
/// segment is also kept below `Int.max`, since its length and the offsets read from it are `Int`s.
package enum SegmentOffsets {
    /// The first byte a segment may not reach: 4 GiB − 1 (the largest 32-bit offset), or `Int.max`
    /// where that is smaller.
    package static let limit: Int64 = min(Int64(UInt32.max), Int64(Int.max))

    /// The end of a segment of `length` bytes after `pending` more are appended to it, in 64 bits.
    package static func end(_ length: Int, appending pending: Int...) -> Int64 {
        pending.reduce(Int64(length)) { $0 + Int64($1) }
    }

    /// Whether a segment of `length` bytes may grow by `pending` bytes and still locate every record
    /// in it by a 32-bit offset.
    package static func fits(_ length: Int, appending pending: Int...) -> Bool {
        pending.reduce(Int64(length)) { $0 + Int64($1) } < limit
    }

    /// The 32-bit offset of a record starting at `position`; nil past ``limit`` (or negative).
    package static func offset(_ position: Int64) -> UInt32? {
        position >= 0 && position < limit ? UInt32(position) : nil
    }
}
