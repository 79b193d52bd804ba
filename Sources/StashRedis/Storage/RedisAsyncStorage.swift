import Foundation
public import Stash

/// What the asynchronous API needs of a Redis store: ``RedisStorage`` and ``RedisHybridStorage``.
protocol RedisStore: StorageAware, Sendable {
    /// Every key, or the error that prevented listing them.
    func keys() throws -> [String]
}

/// The asynchronous API of a Redis store: completion handlers and `async` functions, with the same
/// names as Stash's `AsyncStorage`.
///
/// Calls run on one serial queue per store (shared by its views), in the order they are submitted;
/// completion handlers run on a global queue, so they may call the store freely.
public final class RedisAsyncStorage<T: Sendable>: Sendable {
    private let storage: any StorageAware<T> & Sendable
    private let keys: @Sendable () throws -> [String]
    private let queue: DispatchQueue

    init<Store: RedisStore>(_ storage: Store, queue: DispatchQueue) where Store.T == T {
        self.storage = storage
        keys = { try storage.keys() }
        self.queue = queue
    }

    // MARK: Completion handlers

    /// Reads the value for `key` with its expiry.
    public func entry(forKey key: String, completion: @escaping @Sendable (Result<Entry<T>, any Error>) -> Void) {
        run(completion) { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`.
    public func object(forKey key: String, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        run(completion) { try $0.object(forKey: key) }
    }

    /// Tells whether a valid value exists for `key`.
    public func existsObject(forKey key: String, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        run(completion) { try $0.existsObject(forKey: key) }
    }

    /// Tells whether the value for `key` has expired.
    public func isExpiredObject(forKey key: String, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        run(completion) { try $0.isExpiredObject(forKey: key) }
    }

    /// Stores `object` for `key`; `expiry` overrides the default.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil,
                          completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try $0.setObject(object, forKey: key, expiry: expiry) }
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try $0.removeObject(forKey: key) }
    }

    /// Removes every value of the namespace.
    public func removeAll(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try $0.removeAll() }
    }

    /// Removes every expired value (Redis already does; observers are told).
    public func removeExpiredObjects(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        run(completion) { try $0.removeExpiredObjects() }
    }

    /// Lists every key of the namespace.
    public func allKeys(completion: @escaping @Sendable (Result<[String], any Error>) -> Void) {
        let keys = keys
        run(completion) { _ in try keys() }
    }

    // MARK: async/await

    /// Reads the value for `key` with its expiry.
    public func entry(forKey key: String) async throws -> Entry<T> {
        try await run { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`.
    public func object(forKey key: String) async throws -> T {
        try await run { try $0.object(forKey: key) }
    }

    /// Tells whether a valid value exists for `key`.
    public func existsObject(forKey key: String) async throws -> Bool {
        try await run { try $0.existsObject(forKey: key) }
    }

    /// Tells whether the value for `key` has expired.
    public func isExpiredObject(forKey key: String) async throws -> Bool {
        try await run { try $0.isExpiredObject(forKey: key) }
    }

    /// Stores `object` for `key`; `expiry` overrides the default.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) async throws {
        try await run { try $0.setObject(object, forKey: key, expiry: expiry) }
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String) async throws {
        try await run { try $0.removeObject(forKey: key) }
    }

    /// Removes every value of the namespace.
    public func removeAll() async throws {
        try await run { try $0.removeAll() }
    }

    /// Removes every expired value (Redis already does; observers are told).
    public func removeExpiredObjects() async throws {
        try await run { try $0.removeExpiredObjects() }
    }

    /// Every key of the namespace.
    public func allKeys() async throws -> [String] {
        let keys = keys
        return try await run { _ in try keys() }
    }

    // MARK: Plumbing

    private func run<Value: Sendable>(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                      _ work: @escaping @Sendable (any StorageAware<T> & Sendable) throws -> Value) {
        let storage = storage
        queue.async {
            let result = Result { try work(storage) }
            DispatchQueue.global().async { completion(result) }
        }
    }

    private func run<Value: Sendable>(_ work: @escaping @Sendable (any StorageAware<T> & Sendable) throws -> Value) async throws -> Value {
        let storage = storage
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work(storage) }) }
        }
    }
}
