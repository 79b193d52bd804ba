import Foundation
import StashEngine

// Prefix listing on every layer: ``StorageAware/allKeys(withPrefix:)`` describes what "prefix" means
// (`String.hasPrefix`: whole characters, canonical equivalence). Each layer filters its own index under
// its lock, so listing a namespace never copies every key of the store first.

/// `key.hasPrefix(prefix)`, answered from the UTF-8 bytes where they settle it: most keys and
/// prefixes are ASCII, and `hasPrefix` (whole characters under canonical equivalence) costs far more
/// than a byte compare. Every case the bytes do not settle goes to `hasPrefix` itself.
struct PrefixMatcher {
    let prefix: String
    /// The prefix's bytes when it is ASCII; nil sends every key to `hasPrefix`.
    private let ascii: [UInt8]?

    init(_ prefix: String) {
        self.prefix = prefix
        let bytes = Array(prefix.utf8)
        ascii = bytes.allSatisfy { $0 < 0x80 } ? bytes : nil
    }

    func matches(_ key: String) -> Bool {
        guard let ascii else { return key.hasPrefix(prefix) }
        let utf8 = key.utf8
        var index = utf8.startIndex
        for byte in ascii {
            // Every byte so far is the prefix's (ASCII). An ASCII byte that differs, or the key's end,
            // settles it: an ASCII character is canonically equivalent to itself alone.
            guard index != utf8.endIndex else { return false }
            let keyByte = utf8[index]
            if keyByte != byte { return keyByte < 0x80 ? false : key.hasPrefix(prefix) }
            index = utf8.index(after: index)
        }
        // The prefix's bytes begin the key: a match unless what follows joins the prefix's last
        // character (a combining mark or another non-ASCII scalar; "\n" after "\r").
        guard index != utf8.endIndex else { return true }
        let next = utf8[index]
        if next < 0x80, !(next == 0x0A && ascii.last == 0x0D) { return true }
        return key.hasPrefix(prefix)
    }
}

extension KeyDirectory {
    /// The keys that start with `prefix` (``PrefixMatcher``), Stash's own (``ReservedKeys``) left out, in key order.
    mutating func listing(withPrefix prefix: String) -> [String] {
        let matcher = PrefixMatcher(prefix)
        return keys(withPrefix: prefix, matching: matcher.matches, where: { !ReservedKeys.contains($0) })
    }
}

extension MemoryStorage {
    /// The keys in memory that start with `prefix` (see ``StorageAware/allKeys(withPrefix:)``).
    /// - Complexity: O(n) in the number of keys in memory.
    public func allKeys(withPrefix prefix: String) -> [String] {
        let matcher = PrefixMatcher(prefix)
        return cache.keys { matcher.matches($0) }
    }
}

extension DiskStorage {
    /// The stored keys that start with `prefix`, expired ones included, in key order (the Unicode
    /// scalars of their NFC spellings; see ``Storage/allKeys(withPrefix:)``); no value is read.
    /// - Complexity: O(log n + k) for k keys listed, from the index's ordered keys; the first call
    ///   orders the n keys (O(n log n)), later ones merge the keys written or removed since.
    public func allKeys(withPrefix prefix: String) -> [String] {
        engine.sync { store in store.withIndex { $0.listing(withPrefix: prefix) } }
    }
}

extension HybridStorage {
    /// The stored keys that start with `prefix`, in key order, as the disk index lists them (see
    /// ``StorageAware/allKeys(withPrefix:)``).
    public func allKeys(withPrefix prefix: String) -> [String] {
        diskStorage.allKeys(withPrefix: prefix)
    }
}

extension SyncStorage {
    /// The stored keys that start with `prefix` (see ``StorageAware/allKeys(withPrefix:)``).
    public func allKeys(withPrefix prefix: String) -> [String] {
        innerStorage.allKeys(withPrefix: prefix)
    }
}

extension Storage {
    /// The stored keys that start with `prefix`, expired ones included, in key order.
    ///
    /// ```swift
    /// try storage.setObject(profile, forKey: "user.42.profile")
    /// storage.allKeys(withPrefix: "user.42.")   // ["user.42.profile"]
    /// ```
    /// "Starts with" is `String.hasPrefix`: whole characters compared under canonical equivalence, so
    /// an NFC prefix finds keys stored in NFD and the reverse (see ``StorageAware/allKeys(withPrefix:)``).
    ///
    /// Key order is that of the keys' Unicode scalars in Normalization Form C (their NFC UTF-8
    /// bytes), which is what Swift's `<` on `String` means: `"a" < "b.1" < "b.10" < "b.2"`, and
    /// canonically equivalent spellings sort as one. (Swift's own `<` errs on decomposed Hangul, where
    /// it is no order; a listing never does.)
    /// - Complexity: O(log n + k) for k keys listed, from the disk index's ordered keys (ordered by
    ///   the first call, kept as keys change after it); no value is read.
    public func allKeys(withPrefix prefix: String) -> [String] {
        syncStorage.allKeys(withPrefix: prefix)
    }
}

extension AsyncStorage {
    /// Lists the stored keys that start with `prefix`, in the queue's order with other operations
    /// (see ``StorageAware/allKeys(withPrefix:)``).
    public func allKeys(withPrefix prefix: String, completion: @escaping @Sendable (Result<[String], any Error>) -> Void) {
        let storage = innerStorage
        storage.engine.async { _ in
            let keys = storage.allKeys(withPrefix: prefix)
            // Never on the store's queue, as every completion (a read publishes no change to deliver).
            DispatchQueue.global().async { completion(.success(keys)) }
        }
    }

    /// The stored keys that start with `prefix`, in the queue's order with other operations (see
    /// ``StorageAware/allKeys(withPrefix:)``).
    public func allKeys(withPrefix prefix: String) async -> [String] {
        let storage = innerStorage
        return await withCheckedContinuation { continuation in
            storage.engine.async { _ in continuation.resume(returning: storage.allKeys(withPrefix: prefix)) }
        }
    }
}
