import Foundation
import StashEngine

// Everyday reads: "the value or nothing", "the value or a default", and a list screen's rows in one
// call. Written once over `StorageAware` / `AsyncStorageAware`, so every layer and view has them.

extension StorageAware {
    /// The value stored for `key`, or nil when there is none or it has expired.
    ///
    /// ```swift
    /// if let me = try storage.objectIfPresent(forKey: "me") { … }
    /// ```
    /// - Throws: Only what is a real error: ``StorageError/decodingFailed(_:key:)`` when the stored bytes
    ///   no longer decode (the model changed), ``StorageError/corrupted(_:)``,
    ///   ``StorageError/io(operation:path:underlying:)``.
    public func objectIfPresent(forKey key: String) throws -> T? {
        do {
            return try object(forKey: key)
        } catch StorageError.notFound {
            return nil
        } catch StorageError.expired {
            return nil
        }
    }

    /// The value stored for `key`, or `defaultValue` when there is none or it has expired.
    ///
    /// ```swift
    /// let settings = try storage.object(forKey: "settings", default: Settings())
    /// ```
    /// - Throws: As ``objectIfPresent(forKey:)``: never for a missing or expired value.
    public func object(forKey key: String, default defaultValue: @autoclosure () -> T) throws -> T {
        try objectIfPresent(forKey: key) ?? defaultValue()
    }
}

extension AsyncStorageAware {
    /// The value stored for `key`, or nil when there is none or it has expired (see
    /// ``StorageAware/objectIfPresent(forKey:)``).
    public func objectIfPresent(forKey key: String) async throws -> T? {
        do {
            return try await object(forKey: key)
        } catch StorageError.notFound {
            return nil
        } catch StorageError.expired {
            return nil
        }
    }

    /// The value stored for `key`, or `defaultValue` when there is none or it has expired.
    public func object(forKey key: String, default defaultValue: T) async throws -> T {
        try await objectIfPresent(forKey: key) ?? defaultValue
    }

    /// Reads the value for `key`, nil when there is none or it has expired (see
    /// ``StorageAware/objectIfPresent(forKey:)``).
    public func objectIfPresent(forKey key: String, completion: @escaping @Sendable (Result<T?, any Error>) -> Void) {
        object(forKey: key) { result in
            switch result {
            case .success(let value): completion(.success(value))
            case .failure(StorageError.notFound), .failure(StorageError.expired): completion(.success(nil))
            case .failure(let error): completion(.failure(error))
            }
        }
    }
}

/// What a snapshot of the keys under a prefix holds: each key's stored bytes and expiry, in key
/// order, read in one hop of the store's queue, and the number of the last change published then.
struct PrefixSnapshot: Sendable {
    var records: [(key: String, data: Data, expiry: Double)] = []
    var sequence: UInt64 = 0
}

extension DiskEngine {
    /// The bytes of every key that starts with `prefix`, in key order, read on the queue in one hop
    /// (counted as use). A value found damaged is dropped by the read (as every read does) and left
    /// out; the store changes nothing else, so the snapshot is one state of the store.
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when a value cannot be read.
    func snapshot(withPrefix prefix: String, now: Date) throws -> PrefixSnapshot {
        try sync { store in
            var snapshot = PrefixSnapshot()
            let keys = store.withIndex { $0.listing(withPrefix: prefix) }
            snapshot.records.reserveCapacity(keys.count)
            try store.readValues(of: keys, now: now) { key, data, expiry in snapshot.records.append((key, data, expiry)) }
            snapshot.sequence = observers.lastPublished
            return snapshot
        }
    }

    /// The bytes stored for `key` (nil when there is none), read on the queue, with the number of the
    /// last change published then; for ``ObservableValue``.
    func snapshot(forKey key: String, now: Date) throws -> (data: Data?, sequence: UInt64) {
        try sync { store in
            let data: Data?
            do {
                data = try store.read(key, now: now).data
            } catch StorageError.notFound, StorageError.corrupted {
                data = nil
            }
            return (data, observers.lastPublished)
        }
    }
}

extension DiskStorage {
    /// The valid values whose keys start with `prefix`, with their keys, in key order (see
    /// ``Storage/objects(withPrefix:)``).
    public func objects(withPrefix prefix: String) throws -> [(key: String, value: T)] {
        let now = now()
        let snapshot = try engine.snapshot(withPrefix: prefix, now: now)
        let cutoff = StoredTime.seconds(now)
        var result: [(key: String, value: T)] = []
        result.reserveCapacity(snapshot.records.count)
        for record in snapshot.records where cutoff < record.expiry {
            result.append((record.key, try decode(record.data, key: record.key)))
        }
        return result
    }
}

extension Storage {
    /// The valid values whose keys start with `prefix`, with their keys, in key order (as
    /// ``allKeys(withPrefix:)``: the Unicode scalars of their NFC spellings), read in one call: what a
    /// list screen shows.
    ///
    /// ```swift
    /// for (key, todo) in try todos.objects(withPrefix: "inbox.") { … }
    /// ```
    /// "Starts with" is `String.hasPrefix`, as ``allKeys(withPrefix:)``. Expired values are left out
    /// (as ``StorageAware/objectIfPresent(forKey:)`` answers nil for them; `entry(forKey:)` still reads one); a
    /// value found damaged is dropped by the store and left out. The keys and bytes are read in one
    /// step of the store's queue, so the result is one state of the store (never half a batch);
    /// values are decoded after it, on the calling thread.
    /// - Throws: ``StorageError/decodingFailed(_:key:)`` naming the key of a value that does not decode as `T`
    ///   (nothing is dropped silently: migrate the value, or
    ///   read the prefix through ``ObservableCollection``, which reports such keys in its `errors`);
    ///   ``StorageError/io(operation:path:underlying:)`` when a value cannot be read.
    /// - Complexity: O(log n) to find the prefix's keys in the disk index's ordered keys (see
    ///   ``allKeys(withPrefix:)``), plus one read and one decode per key under `prefix`.
    public func objects(withPrefix prefix: String) throws -> [(key: String, value: T)] {
        try hybridStorage.diskStorage.objects(withPrefix: prefix)
    }
}

extension AsyncStorage {
    /// The valid values whose keys start with `prefix`, in key order, in the queue's order with
    /// other operations (see ``Storage/objects(withPrefix:)``).
    public func objects(withPrefix prefix: String) async throws -> [(key: String, value: T)] {
        let disk = innerStorage.diskStorage
        return try await perform(AsyncCall(.read, key: nil, awaited: true)) { _ in
            try disk.objects(withPrefix: prefix).map { KeyedValue(key: $0.key, value: $0.value) }
        }.map { ($0.key, $0.value) }
    }

    /// Reads the valid values whose keys start with `prefix`, in key order (see ``Storage/objects(withPrefix:)``).
    public func objects(withPrefix prefix: String,
                        completion: @escaping @Sendable (Result<[(key: String, value: T)], any Error>) -> Void) {
        let disk = innerStorage.diskStorage
        submit(AsyncCall(.read, key: nil, awaited: false), { _ in
            try disk.objects(withPrefix: prefix).map { KeyedValue(key: $0.key, value: $0.value) }
        }, completion: { result in completion(result.map { $0.map { ($0.key, $0.value) } }) })
    }
}

/// A key and its value, to carry a listing across a `Sendable` boundary (a tuple is not `Sendable`).
struct KeyedValue<Value: Sendable>: Sendable {
    let key: String
    let value: Value
}
