import Foundation
import StashEngine

/// The synchronous, throwing API every layer offers: memory, disk, hybrid and ``Storage``.
///
/// ```swift
/// try storage.setObject(user, forKey: "me", expiry: .seconds(3600))
/// let user = try storage.object(forKey: "me")
/// ```
public protocol StorageAware<T> {
    /// The type of the stored values.
    associatedtype T

    /// Every stored key, expired ones included, in no particular order.
    var allKeys: [String] { get }

    /// The stored keys that start with `prefix` (expired ones included), in no particular order: the
    /// keys `k` of ``allKeys`` for which `k.hasPrefix(prefix)`.
    ///
    /// "Starts with" is Swift's `String.hasPrefix`: it compares whole characters (extended grapheme
    /// clusters) under canonical equivalence, so `"caf\u{E9}"` (NFC) finds `"cafe\u{301}.menu"` (NFD)
    /// and the reverse, while `"cafe"` does not find `"caf\u{E9}"` (its last character is `"\u{E9}"`,
    /// not `"e"`). The empty prefix lists every key.
    func allKeys(withPrefix prefix: String) -> [String]

    /// The value for `key` with its metadata; expired values are returned too, flagged by ``Entry/isExpired``.
    /// - Throws: ``StorageError/notFound``; ``StorageError/decodingFailed(_:key:)`` when the bytes do not decode
    ///   as `T` (the entry is kept); ``StorageError/corrupted(_:)`` for damaged bytes (the entry is dropped);
    ///   or an I/O error.
    func entry(forKey key: String) throws -> Entry<T>

    /// The valid value for `key`.
    /// - Throws: ``StorageError/expired(_:key:)`` for an expired value, ``StorageError/notFound``, or
    ///   the errors of ``entry(forKey:)``.
    func object(forKey key: String) throws -> T

    /// Whether a valid (stored and unexpired) value exists for `key`.
    func existsObject(forKey key: String) throws -> Bool

    /// Stores `object` for `key`, replacing any value.
    /// - Parameters:
    ///   - object: The value to store.
    ///   - key: Its key; canonically equivalent spellings are one key.
    ///   - expiry: Overrides the layer's default expiry; `.seconds(n)` counts from now.
    func setObject(_ object: T, forKey key: String, expiry: Expiry?) throws

    /// Removes the value for `key`; removing a missing key is not an error.
    func removeObject(forKey key: String) throws

    /// Removes every value.
    func removeAll() throws

    /// Removes every expired value.
    func removeExpiredObjects() throws

    /// Whether the value stored for `key` has expired.
    /// - Throws: ``StorageError/notFound`` when nothing is stored.
    func isExpiredObject(forKey key: String) throws -> Bool
}

extension StorageAware {
    /// Filters ``allKeys``; layers with an index of their own filter it in place.
    public func allKeys(withPrefix prefix: String) -> [String] {
        allKeys.filter { $0.hasPrefix(prefix) }
    }

    /// Stores `object` for `key` with the layer's default expiry.
    public func setObject(_ object: T, forKey key: String) throws {
        try setObject(object, forKey: key, expiry: nil)
    }

    public func object(forKey key: String) throws -> T {
        let entry = try entry(forKey: key)
        if entry.isExpired, case .date(let date) = entry.expiry { throw StorageError.expired(date, key: key) }
        return entry.object
    }

    public func existsObject(forKey key: String) throws -> Bool {
        do {
            return try !entry(forKey: key).isExpired
        } catch StorageError.notFound {
            return false
        }
    }

    public func isExpiredObject(forKey key: String) throws -> Bool {
        try entry(forKey: key).isExpired
    }
}
