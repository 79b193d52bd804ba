import Foundation

// Prefix listing on every layer: ``StorageAware/allKeys(withPrefix:)`` describes what "prefix" means
// (`String.hasPrefix`: whole characters, canonical equivalence). Each layer filters its own index under
// its lock, so listing a namespace never copies every key of the store first.

extension MemoryStorage {
    /// The keys in memory that start with `prefix` (see ``StorageAware/allKeys(withPrefix:)``).
    /// - Complexity: O(n) in the number of keys in memory.
    public func allKeys(withPrefix prefix: String) -> [String] {
        cache.keys { $0.hasPrefix(prefix) }
    }
}

extension DiskStorage {
    /// The stored keys that start with `prefix`, expired ones included (see
    /// ``StorageAware/allKeys(withPrefix:)``); no value is read.
    /// - Complexity: O(n) in the number of stored keys.
    public func allKeys(withPrefix prefix: String) -> [String] {
        engine.sync { store in store.withIndex { $0.keys { $0.hasPrefix(prefix) } } }
    }
}

extension HybridStorage {
    /// The stored keys that start with `prefix`, as the disk index lists them (see
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
    /// The stored keys that start with `prefix`, expired ones included, in no particular order.
    ///
    /// ```swift
    /// try storage.setObject(profile, forKey: "user.42.profile")
    /// storage.allKeys(withPrefix: "user.42.")   // ["user.42.profile"]
    /// ```
    /// "Starts with" is `String.hasPrefix`: whole characters compared under canonical equivalence, so
    /// an NFC prefix finds keys stored in NFD and the reverse (see ``StorageAware/allKeys(withPrefix:)``).
    /// - Complexity: O(n) in the number of stored keys; no value is read.
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
