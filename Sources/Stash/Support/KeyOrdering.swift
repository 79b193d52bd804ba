import Foundation

/// The order of keys that the layers show: the order of their NFC spellings' UTF-8 bytes (their Unicode
/// scalars in Normalization Form C), the order of ``Storage/allKeys(withPrefix:)``.
///
/// Swift's `<` on `String` is no order on some keys: on decomposed Hangul, two different keys are each
/// not less than the other, so a sort by it is not stable from one call to the next and can disagree
/// with a prefix listing.
enum KeyOrdering {
    /// The bytes that order `key`.
    static func bytes(_ key: String) -> [UInt8] {
        key.utf8.allSatisfy { $0 < 0x80 } ? Array(key.utf8) : Array(key.precomposedStringWithCanonicalMapping.utf8)
    }

    /// `keys` in key order.
    static func sorted(_ keys: some Sequence<String>) -> [String] {
        keys.map { (key: $0, order: bytes($0)) }
            .sorted { $0.order.lexicographicallyPrecedes($1.order) }
            .map(\.key)
    }
}
