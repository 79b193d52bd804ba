import Foundation

/// Delta-seconds (RFC 9111 §1.2.2): a count of seconds in `Cache-Control` arguments and `Age`.
///
/// The RFC asks a cache to read any value past 2^31 as 2^31, so the count is kept in 64 bits: 2^31
/// itself does not fit a 32-bit `Int` (Apple Watch's arm64_32), where `min(value, 2_147_483_648)` on
/// an `Int` does not even compile and converting a larger age back to `Int` would trap.
enum DeltaSeconds {
    /// The largest value a cache keeps (2^31).
    static let cap: Int64 = 2_147_483_648

    /// The value of `text` when it is one or more ASCII digits (no sign, no space), capped at
    /// ``cap``; nil for anything else. Any number of digits is accepted: 30 nines is 2^31 too.
    static func parse<Text: StringProtocol>(_ text: Text) -> Int64? {
        guard !text.isEmpty else { return nil }
        var value: Int64 = 0
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            // Saturates: once past the cap the remaining digits only need checking.
            if value < cap { value = value * 10 + Int64(byte - UInt8(ascii: "0")) }
        }
        return min(value, cap)
    }

    /// `seconds` in whole seconds (rounded down), at least 0 and at most ``cap``, as the text a
    /// field carries; NaN counts as 0.
    static func format(_ seconds: TimeInterval) -> String {
        String(wholeSeconds(seconds))
    }

    /// `seconds` rounded down to whole seconds and clamped to 0...``cap`` (NaN is 0).
    static func wholeSeconds(_ seconds: TimeInterval) -> Int64 {
        guard seconds > 0 else { return 0 }
        return seconds >= TimeInterval(cap) ? cap : Int64(seconds.rounded(.down))
    }
}
