package import Foundation

/// How the disk engine keeps a time (an expiry, a last use): the `Double` a `Date` is made of,
/// `timeIntervalSinceReferenceDate` (seconds since 2001-01-01), bit for bit.
///
/// Seconds since 1970, which records held before, cost a rounding each way (adding or subtracting
/// 978,307,200 s): a fractional expiry such as `now + 0.1` came back ~1e-7 s off after a reopen, and
/// `entry.expiry` or ``StorageError/expired(_:key:)`` no longer equalled what was written (Contract item 1).
/// Records written this way carry ``SegmentFormat/referenceSeconds``; older ones are read with
/// ``fromSeconds1970(_:)``, so they keep meaning exactly what they meant.
package enum StoredTime {
    /// `Date.distantFuture`: never expires.
    package static let never = Date.distantFuture.timeIntervalSinceReferenceDate

    @inline(__always)
    package static func seconds(_ date: Date) -> Double { date.timeIntervalSinceReferenceDate }

    @inline(__always)
    package static func date(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: seconds) }

    /// A time stored as seconds since 1970 (records without ``SegmentFormat/referenceSeconds``, the
    /// version-1 journal), as the engine keeps it: the `Date` that `Date(timeIntervalSince1970:)` made
    /// of it when such a record was read before, so an old store reads as it always did.
    static func fromSeconds1970(_ seconds: Double) -> Double {
        Date(timeIntervalSince1970: seconds).timeIntervalSinceReferenceDate
    }
}
