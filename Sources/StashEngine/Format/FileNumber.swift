package import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Numbers read from files (lengths, offsets, counts, sizes: a header's `UInt32` or `UInt64`, a file's
/// `st_size`) become an `Int` only through here. Where `Int` has 32 bits (Apple Watch, arm64_32) a
/// crafted or foreign file, or any file past 2 GiB, holds numbers that do not fit, and `Int(x)` would
/// trap; these give nil (a parser then refuses the file: `StorageError.corrupted`, or a key directory
/// rebuilt from the segments) or throw the I/O error `EFBIG` (a file too large for this platform).
///
/// `bitWidth` is the width of `Int` the check is made for: the platform's, except in tests, which run
/// the 32-bit checks on a 64-bit machine.
package enum FileNumber {
    /// `value` as an `Int` of `bitWidth` bits; nil if it does not fit.
    @inline(__always)
    static func int<T: BinaryInteger>(_ value: T, bitWidth: Int = Int.bitWidth) -> Int? {
        guard let wide = Int64(exactly: value) else { return nil }
        if bitWidth < 64 {
            let limit = Int64(1) << (bitWidth - 1)
            guard wide >= -limit, wide < limit else { return nil }
        }
        return Int(exactly: wide)
    }

    /// `a + b` as an `Int` of `bitWidth` bits; nil on overflow.
    package static func sum(_ a: Int, _ b: Int, bitWidth: Int = Int.bitWidth) -> Int? {
        let (result, overflow) = Int64(a).addingReportingOverflow(Int64(b))
        return overflow ? nil : int(result, bitWidth: bitWidth)
    }

    /// `a × b` as an `Int` of `bitWidth` bits; nil on overflow.
    package static func product(_ a: Int, _ b: Int, bitWidth: Int = Int.bitWidth) -> Int? {
        let (result, overflow) = Int64(a).multipliedReportingOverflow(by: Int64(b))
        return overflow ? nil : int(result, bitWidth: bitWidth)
    }

    /// `value` as an `Int`, or `Int.max` when it does not fit: for sums kept for accounting (dead
    /// bytes, live bytes), where a crafted length must not trap and an exact figure is not needed.
    @inline(__always)
    static func saturating<T: BinaryInteger>(_ value: T) -> Int {
        Int(exactly: value) ?? (value < 0 ? Int.min : Int.max)
    }

    /// The size of the file `info` describes.
    /// - Throws: `StorageError.io` with `EFBIG` for a size that is no `Int` here (past 2 GiB where
    ///   `Int` has 32 bits), rather than trapping in the conversion.
    package static func size(_ info: stat, path: String, bitWidth: Int = Int.bitWidth) throws -> Int {
        guard let size = int(info.st_size, bitWidth: bitWidth), size >= 0 else { throw FileIO.error("fstat", path, code: EFBIG) }
        return size
    }
}
