import Foundation
import StashEngine

/// One call of an asynchronous storage API, as the type that runs it sees it.
///
/// Made only by the API's own methods: a runner orders and places calls by it, and cannot be handed
/// a call that no method made.
package struct AsyncCall: Sendable {
    /// Whether a call only reads or may change what is stored.
    package enum Kind: Sendable { case read, mutation }

    /// Whether the call reads or changes.
    package let kind: Kind
    /// The key the call touches; nil for a call on every key (`removeAll`, `allKeys`, `removeExpiredObjects`).
    package let key: String?
    /// Whether the caller awaits it (an `async` function) rather than passing a completion handler.
    package let isAwaited: Bool

    package init(_ kind: Kind, key: String?, awaited: Bool) {
        self.kind = kind
        self.key = key
        self.isAwaited = awaited
    }
}

/// The asynchronous counterpart of ``StorageAware``: completion handlers and `async` functions for
/// every operation, written once here. How the calls run is each conforming type's own business,
/// reached through ``runner`` and not public: `AsyncStorage` runs them on the store's serial queue, in
/// submission order; StashRedis's `RedisAsyncStorage` concurrently, on its connection pool.
///
/// Completion handlers never run on the caller's stack nor on a store's queue, so they may call the
/// store freely.
///
/// Stash's own asynchronous storages conform to it; write code against it to accept any of them.
/// (Other types cannot conform: ``AsyncRunner`` is made by Stash only.)
public protocol AsyncStorageAware<T>: Sendable {
    /// The type of the stored values.
    associatedtype T: Sendable

    /// How this storage runs its calls: made by Stash, with no public members.
    var runner: AsyncRunner<T> { get }
}

/// How an ``AsyncStorageAware`` storage runs its calls (its scheduling, and which reads it may
/// answer at once): opaque outside Stash, so that the protocol's public face is the operations alone.
public struct AsyncRunner<T: Sendable>: Sendable {
    package let base: any AsyncCallRunning<T>

    package init(_ base: any AsyncCallRunning<T>) {
        self.base = base
    }
}

/// What an asynchronous storage decides (package-wide, not public): how a call runs
/// (``submit(_:_:completion:)`` and ``perform(_:_:)``) and which reads it may answer at once, on the
/// caller's thread, without overtaking an earlier mutation (the `immediate…` requirements; nil means
/// "run it").
package protocol AsyncCallRunning<T>: AnyObject, Sendable {
    associatedtype T: Sendable

    /// Runs `work` on the synchronous store as `call` describes, then `completion` with its result.
    func submit<Value: Sendable>(_ call: AsyncCall, _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value,
                                 completion: @escaping @Sendable (Result<Value, any Error>) -> Void)
    /// Runs `work` on the synchronous store as `call` describes and returns its result.
    func perform<Value: Sendable>(_ call: AsyncCall, _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value

    /// The entry for `call.key` if it can be answered now without overtaking an earlier mutation, else nil.
    func immediateEntry(for call: AsyncCall) -> Entry<T>?
    /// The valid value for `call.key` if it can be answered now (throws `expired` as `object(forKey:)`), else nil.
    func immediateObject(for call: AsyncCall) throws -> T?
    /// Whether a valid value exists for `call.key`, if that can be answered now; else nil.
    func immediateExistence(for call: AsyncCall) throws -> Bool?
    /// Whether the value for `call.key` has expired, if that can be answered now; else nil.
    func immediateExpiry(for call: AsyncCall) throws -> Bool?
}

extension AsyncCallRunning {
    // Defaults: nothing is answered at once.
    package func immediateEntry(for call: AsyncCall) -> Entry<T>? { nil }
    package func immediateObject(for call: AsyncCall) throws -> T? { nil }
    package func immediateExistence(for call: AsyncCall) throws -> Bool? { nil }
    package func immediateExpiry(for call: AsyncCall) throws -> Bool? { nil }
}

extension AsyncStorageAware {
    /// Runs `work` as the runner does (``AsyncCallRunning/submit(_:_:completion:)``).
    package func submit<Value: Sendable>(_ call: AsyncCall, _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value,
                                         completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        runner.base.submit(call, work, completion: completion)
    }

    /// Runs `work` as the runner does (``AsyncCallRunning/perform(_:_:)``).
    package func perform<Value: Sendable>(_ call: AsyncCall,
                                          _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
        try await runner.base.perform(call, work)
    }
}

extension AsyncStorageAware {
    // MARK: Completion handlers

    /// Reads the value for `key` with its expiry.
    public func entry(forKey key: String, completion: @escaping @Sendable (Result<Entry<T>, any Error>) -> Void) {
        answer(.read, key, completion, at: { runner.base.immediateEntry(for: $0) }) { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`; fails with ``StorageError/expired(_:key:)`` for an expired one where the store keeps those.
    public func object(forKey key: String, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        answer(.read, key, completion, at: { try runner.base.immediateObject(for: $0) }) { try $0.object(forKey: key) }
    }

    /// Tells whether a valid value exists for `key`.
    public func existsObject(forKey key: String, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        answer(.read, key, completion, at: { try runner.base.immediateExistence(for: $0) }) { try $0.existsObject(forKey: key) }
    }

    /// Tells whether the value for `key` has expired.
    public func isExpiredObject(forKey key: String, completion: @escaping @Sendable (Result<Bool, any Error>) -> Void) {
        answer(.read, key, completion, at: { try runner.base.immediateExpiry(for: $0) }) { try $0.isExpiredObject(forKey: key) }
    }

    /// Stores `object` for `key`; `expiry` overrides the default.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil,
                          completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit(AsyncCall(.mutation, key: key, awaited: false), { try $0.setObject(object, forKey: key, expiry: expiry) }, completion: completion)
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit(AsyncCall(.mutation, key: key, awaited: false), { try $0.removeObject(forKey: key) }, completion: completion)
    }

    /// Removes every value.
    public func removeAll(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit(AsyncCall(.mutation, key: nil, awaited: false), { try $0.removeAll() }, completion: completion)
    }

    /// Removes every expired value.
    public func removeExpiredObjects(completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        submit(AsyncCall(.mutation, key: nil, awaited: false), { try $0.removeExpiredObjects() }, completion: completion)
    }

    // MARK: async/await

    /// Reads the value for `key` with its expiry.
    public func entry(forKey key: String) async throws -> Entry<T> {
        try await answer(.read, key, at: { runner.base.immediateEntry(for: $0) }) { try $0.entry(forKey: key) }
    }

    /// Reads the valid value for `key`; throws ``StorageError/expired(_:key:)`` for an expired one where the store keeps those.
    public func object(forKey key: String) async throws -> T {
        try await answer(.read, key, at: { try runner.base.immediateObject(for: $0) }) { try $0.object(forKey: key) }
    }

    /// Tells whether a valid value exists for `key`.
    public func existsObject(forKey key: String) async throws -> Bool {
        try await answer(.read, key, at: { try runner.base.immediateExistence(for: $0) }) { try $0.existsObject(forKey: key) }
    }

    /// Tells whether the value for `key` has expired.
    public func isExpiredObject(forKey key: String) async throws -> Bool {
        try await answer(.read, key, at: { try runner.base.immediateExpiry(for: $0) }) { try $0.isExpiredObject(forKey: key) }
    }

    /// Stores `object` for `key`; `expiry` overrides the default.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) async throws {
        try await perform(AsyncCall(.mutation, key: key, awaited: true)) { try $0.setObject(object, forKey: key, expiry: expiry) }
    }

    /// Removes the value for `key`.
    public func removeObject(forKey key: String) async throws {
        try await perform(AsyncCall(.mutation, key: key, awaited: true)) { try $0.removeObject(forKey: key) }
    }

    /// Removes every value.
    public func removeAll() async throws {
        try await perform(AsyncCall(.mutation, key: nil, awaited: true)) { try $0.removeAll() }
    }

    /// Removes every expired value.
    public func removeExpiredObjects() async throws {
        try await perform(AsyncCall(.mutation, key: nil, awaited: true)) { try $0.removeExpiredObjects() }
    }

    // MARK: Plumbing

    /// A read with a completion handler: answered at once when `immediate` can (the handler still runs
    /// on a global queue, never on the caller's stack), else submitted.
    private func answer<Value: Sendable>(_ kind: AsyncCall.Kind, _ key: String,
                                         _ completion: @escaping @Sendable (Result<Value, any Error>) -> Void,
                                         at immediate: (AsyncCall) throws -> Value?,
                                         _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) {
        let call = AsyncCall(kind, key: key, awaited: false)
        do {
            if let value = try immediate(call) {
                DispatchQueue.global().async { completion(.success(value)) }
                return
            }
        } catch {
            DispatchQueue.global().async { completion(.failure(error)) }
            return
        }
        submit(call, work, completion: completion)
    }

    /// An awaited read: answered at once when `immediate` can, else performed.
    private func answer<Value: Sendable>(_ kind: AsyncCall.Kind, _ key: String, at immediate: (AsyncCall) throws -> Value?,
                                         _ work: @escaping @Sendable (any StorageAware<T>) throws -> Value) async throws -> Value {
        let call = AsyncCall(kind, key: key, awaited: true)
        if let value = try immediate(call) { return value }
        return try await perform(call, work)
    }
}
