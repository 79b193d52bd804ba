import Foundation

/// The asynchronous API of a store: completion handlers and `async` functions.
///
/// Operations run on the store's serial queue in the order they are submitted, interleaved with
/// synchronous calls. Completion handlers run on a global queue, never on the store's queue, so
/// they may call the storage (synchronously or not) freely; observers have heard of a change
/// before its completion runs (or its `await` returns).
///
/// The `async` reads answer a memory hit at once, under the memory layer's lock, without a thread
/// hop, as long as no mutation submitted through this API is still waiting: a read never overtakes
/// a write submitted before it.
///
/// ```swift
/// storage.async.object(forKey: "me") { result in … }
/// let user = try await storage.async.object(forKey: "me")
/// ```
public final class AsyncStorage<T: Sendable>: Sendable {
    let innerStorage: HybridStorage<T>

    /// Wraps a hybrid storage.
    public init(storage: HybridStorage<T>) {
        innerStorage = storage
    }

    // MARK: Completion handlers

    /// Reads the value for `key` with its metadata (expired values included, flagged).
    public func entry(forKey key: String, completion: @escaping @Sendable (Result<Entry<T>, any Error>) -> Void) {
        run(completion) { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`; fails with ``StorageError/expired(_:)`` for an expired one.
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
        mutate(completion) { try $0.setObject(object, forKey: key, expiry: expiry) }
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        mutate(completion) { try $0.removeObject(forKey: key) }
    }

    /// Removes every value.
    public func removeAll(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        mutate(completion) { try $0.removeAll() }
    }

    /// Removes every expired value.
    public func removeExpiredObjects(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        mutate(completion) { try $0.removeExpiredObjects() }
    }

    /// Removes expired, then least recently used values until at most `size` bytes remain on disk.
    public func trim(toSize size: Int, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        mutate(completion) { try $0.trim(toSize: size) }
    }

    /// Lists every stored key (expired ones included), in the queue's order with other operations.
    public func allKeys(completion: @escaping @Sendable (Result<[String], any Error>) -> Void) {
        run(completion) { $0.allKeys }
    }

    // MARK: async/await

    /// Reads the value for `key` with its metadata (expired values included, flagged).
    public func entry(forKey key: String) async throws -> Entry<T> {
        if canAnswerFromMemory, let entry = innerStorage.memoryEntry(forKey: key) { return entry }
        return try await run { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`; throws ``StorageError/expired(_:)`` for an expired one.
    public func object(forKey key: String) async throws -> T {
        if canAnswerFromMemory, let object = try innerStorage.memoryObject(forKey: key) { return object }
        return try await run { try $0.object(forKey: key) }
    }

    /// Tells whether a valid value exists for `key`.
    public func existsObject(forKey key: String) async throws -> Bool {
        // Answered from memory or the disk index, never the queue, once no earlier write is pending.
        if canAnswerFromMemory { return try innerStorage.existsObject(forKey: key) }
        return try await run { try $0.existsObject(forKey: key) }
    }

    /// Tells whether the value for `key` has expired.
    public func isExpiredObject(forKey key: String) async throws -> Bool {
        if canAnswerFromMemory { return try innerStorage.isExpiredObject(forKey: key) }
        return try await run { try $0.isExpiredObject(forKey: key) }
    }

    /// Stores `object` for `key`; `expiry` overrides the default.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) async throws {
        try await mutate { try $0.setObject(object, forKey: key, expiry: expiry) }
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String) async throws {
        try await mutate { try $0.removeObject(forKey: key) }
    }

    /// Removes every value.
    public func removeAll() async throws {
        try await mutate { try $0.removeAll() }
    }

    /// Removes every expired value.
    public func removeExpiredObjects() async throws {
        try await mutate { try $0.removeExpiredObjects() }
    }

    /// Removes expired, then least recently used values until at most `size` bytes remain on disk.
    public func trim(toSize size: Int) async throws {
        try await mutate { try $0.trim(toSize: size) }
    }

    /// Every stored key (expired ones included), in the queue's order with other operations.
    public func allKeys() async -> [String] {
        let storage = innerStorage
        return await withCheckedContinuation { continuation in
            storage.engine.async { _ in continuation.resume(returning: storage.allKeys) }
        }
    }

    // MARK: Plumbing

    /// Whether an `async` read may be answered without the queue: no mutation submitted through this
    /// API (by any caller, through any view or storage of the folder) is still waiting to run.
    private var canAnswerFromMemory: Bool { innerStorage.engine.pendingAsyncMutations.isEmpty }

    /// Runs `work` on the queue; `completion` runs on a global queue once observers heard of its changes.
    private func run<Value: Sendable>(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                      _ work: @escaping @Sendable (HybridStorage<T>) throws -> Value) {
        let storage = innerStorage
        let engine = storage.engine
        engine.async { _ in
            let before = engine.observers.lastPublished
            let result = Result { try work(storage) }
            let published = engine.observers.lastPublished
            DispatchQueue.global().async {
                if published > before { engine.observers.deliver(through: published) }
                completion(result)
            }
        }
    }

    /// ``run(_:_:)`` for a mutation: counted as pending from now until it has run.
    private func mutate<Value: Sendable>(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                         _ work: @escaping @Sendable (HybridStorage<T>) throws -> Value) {
        let pending = innerStorage.engine.pendingAsyncMutations
        pending.begin()
        run(completion) { storage in
            defer { pending.end() }
            return try work(storage)
        }
    }

    /// Runs `work` on the queue and returns once observers heard of its changes: straight from the
    /// queue when it made none (or they are delivered already), else after delivering on a global queue.
    private func run<Value: Sendable>(_ work: @escaping @Sendable (HybridStorage<T>) throws -> Value) async throws -> Value {
        let storage = innerStorage
        let engine = storage.engine
        return try await withCheckedThrowingContinuation { continuation in
            engine.async { _ in
                let before = engine.observers.lastPublished
                let result = Result { try work(storage) }
                let published = engine.observers.lastPublished
                if published == before || engine.observers.isDelivered(through: published) {
                    continuation.resume(with: result)
                } else {
                    DispatchQueue.global().async {
                        engine.observers.deliver(through: published)
                        continuation.resume(with: result)
                    }
                }
            }
        }
    }

    /// ``run(_:)`` for a mutation: counted as pending from now until it has run.
    private func mutate<Value: Sendable>(_ work: @escaping @Sendable (HybridStorage<T>) throws -> Value) async throws -> Value {
        let pending = innerStorage.engine.pendingAsyncMutations
        pending.begin()
        return try await run { storage in
            defer { pending.end() }
            return try work(storage)
        }
    }
}
