import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Offsets and sizes near 4 GiB are computed in 64 bits: where `Int` has 32 bits (Apple Watch) the
/// same sums in `Int` would trap from 2 GiB on. These check the arithmetic itself at the boundaries,
/// on a 64-bit host (the only one Stash is tested on), where sizes past 4 GiB can be passed as `Int`s.
#if _pointerBitWidth(_64)
@Suite("Segment offsets near 4 GiB")
struct SegmentOffsetsTests {
    private let fourGiB = Int64(1) << 32

    @Test("a segment may grow up to the last 32-bit offset and no further")
    func fitsBelowFourGiB() {
        #expect(SegmentOffsets.limit == Int64(UInt32.max))
        let nearEnd = Int(UInt32.max) - 100
        #expect(SegmentOffsets.fits(nearEnd, appending: 60, 39))
        #expect(!SegmentOffsets.fits(nearEnd, appending: 60, 40)) // would end exactly at UInt32.max
        #expect(!SegmentOffsets.fits(nearEnd, appending: 1 << 20))
        #expect(SegmentOffsets.fits(Int(Int32.max), appending: 1)) // past 2 GiB is fine: only Int32 would fail here
    }

    @Test("ends past 2 GiB and 4 GiB are exact")
    func endsAreExact() {
        #expect(SegmentOffsets.end(Int(Int32.max), appending: 1) == 2_147_483_648)
        #expect(SegmentOffsets.end(Int(UInt32.max), appending: 1, 1) == fourGiB + 1)
        #expect(SegmentOffsets.end(Int(Int64.max) - 10, appending: 5) == Int64.max - 5)
    }

    @Test("the 32-bit offset of a position exists only below the limit")
    func offsetsBelowTheLimit() {
        #expect(SegmentOffsets.offset(0) == 0)
        #expect(SegmentOffsets.offset(2_147_483_648) == 2_147_483_648)
        #expect(SegmentOffsets.offset(Int64(UInt32.max) - 1) == UInt32.max - 1)
        #expect(SegmentOffsets.offset(Int64(UInt32.max)) == nil)
        #expect(SegmentOffsets.offset(fourGiB) == nil)
        #expect(SegmentOffsets.offset(-1) == nil)
    }

    @Test("a record whose length field is 2 GiB or more is no record, not a trap", arguments: [
        UInt32(1) << 31, UInt32.max, (UInt32(1) << 31) - 1,
    ])
    func hugeRecordLengthIsRejected(length: UInt32) {
        var bytes = SegmentFormat.header(.init(id: 1, salt: 5, flags: 0, store: 1, floor: 0))
        let start = bytes.count
        bytes += [UInt8](repeating: 0, count: 64)
        withUnsafeBytes(of: length.littleEndian) { bytes.replaceSubrange((start + 4)..<(start + 8), with: $0) }
        #expect(bytes.withUnsafeBytes { SegmentFormat.record(in: $0, at: start, salt: 5) } == nil)
    }
}
#endif
