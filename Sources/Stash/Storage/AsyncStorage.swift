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
/// The operations themselves come from ``AsyncStorageAware``; this type decides how they run.
///
/// ```swift
/// storage.async.object(forKey: "me") { result in … }
/// let user = try await storage.async.object(forKey: "me")
/// ```
public final class AsyncStorage<T: Sendable>: AsyncStorageAware, AsyncCallRunning, Sendable {
    let innerStorage: HybridStorage<T>

    /// Wraps a hybrid storage.
    public init(storage: HybridStorage<T>) {
        innerStorage = storage
    }

    /// Removes expired, then least recently used values until at most `size` bytes remain on disk.
    public func trim(toSize size: Int, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let storage = innerStorage
        submit(AsyncCall(.mutation, key: nil, awaited: false), { _ in try storage.trim(toSize: size) }, completion: completion)
    }

    /// Lists every stored key (expired ones included), in the queue's order with other operations.
    public func allKeys(completion: @escaping @Sendable (Result<[String], any Error>) -> Void) {
        submit(AsyncCall(.read, key: nil, awaited: false), { $0.allKeys }, completion: completion)
    }

    /// Removes expired, then least recently used values until at most `size` bytes remain on disk.
    public func trim(toSize size: Int) async throws {
        let storage = innerStorage
        try await perform(AsyncCall(.mutation, key: nil, awaited: true)) { _ in try storage.trim(toSize: size) }
    }

    /// Every stored key (expired ones included), in the queue's order with other operations.
    public func allKeys() async -> [String] {
        let storage = innerStorage
        return await withCheckedContinuation { continuation in
            storage.engine.async { _ in continuation.resume(returning: storage.allKeys) }
        }
    }

    // MARK: AsyncCallRunning: every call on the store's queue, reads from memory when nothing waits

    /// This storage runs its calls itself.
    public var runner: AsyncRunner<T> { AsyncRunner(self) }

    package func submit<Value: Sendable>(_ call: AsyncCall, _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value,
                                         completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        if call.kind == .mutation { mutate(completion, work) } else { run(completion, work) }
    }

    package func perform<Value: Sendable>(_ call: AsyncCall,
                                          _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
        call.kind == .mutation ? try await mutate(work) : try await run(work)
    }

    /// A memory hit for an awaited read, once no earlier mutation waits. A completion handler's read
    /// keeps its place on the queue, as it always has.
    package func immediateEntry(for call: AsyncCall) -> Entry<T>? {
        guard call.isAwaited, let key = call.key, canAnswerFromMemory else { return nil }
        return innerStorage.memoryEntry(forKey: key)
    }

    package func immediateObject(for call: AsyncCall) throws -> T? {
        guard call.isAwaited, let key = call.key, canAnswerFromMemory else { return nil }
        return try innerStorage.memoryObject(forKey: key)
    }

    /// Answered from memory or the disk index, never the queue, once no earlier write is pending.
    package func immediateExistence(for call: AsyncCall) throws -> Bool? {
        guard call.isAwaited, let key = call.key, canAnswerFromMemory else { return nil }
        return try innerStorage.existsObject(forKey: key)
    }

    package func immediateExpiry(for call: AsyncCall) throws -> Bool? {
        guard call.isAwaited, let key = call.key, canAnswerFromMemory else { return nil }
        return try innerStorage.isExpiredObject(forKey: key)
    }

    // MARK: Plumbing

    /// Whether an `async` read may be answered without the queue: no mutation submitted through this
    /// API (by any caller, through any view or storage of the folder) is still waiting to run.
    private var canAnswerFromMemory: Bool { innerStorage.engine.pendingAsyncMutations.isEmpty }

    /// Runs `work` on the queue; `completion` runs on a global queue once observers heard of its changes.
    private func run<Value: Sendable>(_ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                      _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) {
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
                                         _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) {
        let pending = innerStorage.engine.pendingAsyncMutations
        pending.begin()
        run(completion) { storage in
            defer { pending.end() }
            return try work(storage)
        }
    }

    /// Runs `work` on the queue and returns once observers heard of its changes: straight from the
    /// queue when it made none (or they are delivered already), else after delivering on a global queue.
    private func run<Value: Sendable>(_ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
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
    private func mutate<Value: Sendable>(_ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
        let pending = innerStorage.engine.pendingAsyncMutations
        pending.begin()
        return try await run { storage in
            defer { pending.end() }
            return try work(storage)
        }
    }
}
