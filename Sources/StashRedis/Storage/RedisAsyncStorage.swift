import Foundation
public import Stash

/// What the asynchronous API needs of a Redis store: ``RedisStorage`` and ``RedisHybridStorage``.
protocol RedisStore: StorageAware, Sendable {
    /// Every key, or the error that prevented listing them.
    func keys() throws -> [String]
    /// The valid entry held in memory for `key` (the near cache's), without asking Redis; nil when none.
    func memoryEntry(forKey key: String) -> Entry<T>?
}

extension RedisStore {
    func memoryEntry(forKey key: String) -> Entry<T>? { nil }
}

/// The asynchronous API of a Redis store: completion handlers and `async` functions, with the same
/// names as Stash's `AsyncStorage` (both are `AsyncStorageAware`; only how calls run differs).
///
/// Calls run concurrently, as many at once as the client's pool has connections, so independent
/// callers never wait behind one another's round trips. Submission order is kept where it matters:
/// a call waits for every earlier call that conflicts with it (a mutation of its key, or a call on
/// every key such as `removeAll`), so a read submitted after a write of its key sees that write. A
/// near cache answers a memory hit at once, on the caller's thread, unless a mutation of that key
/// submitted earlier has not finished. Completion handlers run on the call's own lane once the call
/// has given up its place (a memory hit's on a global queue), never on the caller's stack, so they may
/// call the store freely, and one that blocks holds up no other call.
public final class RedisAsyncStorage<T: Sendable>: AsyncStorageAware, AsyncCallRunning, Sendable {
    private let storage: any StorageAware<T> & Sendable
    private let keys: @Sendable () throws -> [String]
    private let memoryEntry: @Sendable (String) -> Entry<T>?
    private let scheduler: AsyncCallScheduler

    init<Store: RedisStore>(_ storage: Store, scheduler: AsyncCallScheduler) where Store.T == T {
        self.storage = storage
        keys = { try storage.keys() }
        memoryEntry = { storage.memoryEntry(forKey: $0) }
        self.scheduler = scheduler
    }

    /// Lists every key of the namespace; fails with the Redis error when it cannot (never an empty list instead).
    public func allKeys(completion: @escaping @Sendable (Result<[String], any Error>) -> Void) {
        let keys = keys
        submit(AsyncCall(.read, key: nil, awaited: false), { _ in try keys() }, completion: completion)
    }

    /// Every key of the namespace.
    /// - Throws: `StorageError.io` when Redis fails (never an empty list instead).
    public func allKeys() async throws -> [String] {
        let keys = keys
        return try await perform(AsyncCall(.read, key: nil, awaited: true)) { _ in try keys() }
    }

    // MARK: AsyncCallRunning: concurrent calls, memory hits at once

    /// This storage runs its calls itself.
    public var runner: AsyncRunner<T> { AsyncRunner(self) }

    package func submit<Value: Sendable>(_ call: AsyncCall, _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value,
                                         completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        let storage = storage
        scheduler.submit(call) { done in
            let result = Result { try work(storage) }
            done()
            completion(result) // on the call's lane, after it gave up its slot: a handler that blocks holds up no call
        }
    }

    package func perform<Value: Sendable>(_ call: AsyncCall,
                                          _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
        let storage = storage
        return try await withCheckedThrowingContinuation { continuation in
            scheduler.submit(call) { done in
                let result = Result { try work(storage) }
                done()
                continuation.resume(with: result) // resuming never blocks: straight from the lane
            }
        }
    }

    package func immediateEntry(for call: AsyncCall) -> Entry<T>? {
        guard let key = call.key, scheduler.mayAnswerAtOnce(key) else { return nil }
        return memoryEntry(key)
    }

    package func immediateObject(for call: AsyncCall) throws -> T? {
        immediateEntry(for: call)?.object
    }

    package func immediateExistence(for call: AsyncCall) throws -> Bool? {
        immediateEntry(for: call) == nil ? nil : true
    }

    package func immediateExpiry(for call: AsyncCall) throws -> Bool? {
        immediateEntry(for: call) == nil ? nil : false
    }
}
