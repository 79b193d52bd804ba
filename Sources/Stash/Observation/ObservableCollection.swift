import Foundation
public import Observation

/// The values stored under a key prefix, as an `@Observable` dictionary that stays current with the
/// store: a list screen's model for SwiftUI and other main-actor code.
///
/// ```swift
/// let inbox = ObservableCollection(prefix: "inbox.", in: todos)
/// try inbox.set(Todo(title: "Milk", done: false), forKey: "inbox.1")
/// inbox.values["inbox.1"]?.title   // "Milk"
/// ```
///
/// ``values`` holds every stored key that starts with ``prefix`` (`String.hasPrefix`, as
/// `allKeys(withPrefix:)`; the empty prefix follows the whole store) with its value, and follows every
/// change: through this object, through ``storage`` or any typed view of it, and through every other
/// `Storage` or `DiskStorage` of the same folder in this process. Changes made on other threads reach
/// ``values`` on the main actor, in commit order, shortly after they are committed; a change made
/// through ``set(_:forKey:expiry:)`` or ``remove(forKey:)`` shows when the call returns.
///
/// Needs the Observation module: macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1 (any Linux toolchain).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class ObservableCollection<Value: Sendable> {
    /// The stored values whose keys start with ``prefix``, by key. Expired values are included (expiry
    /// passes without a change to observe); keys whose bytes do not decode as `Value` are left out.
    public private(set) var values: [String: Value] = [:]

    /// The prefix of the keys this object follows.
    @ObservationIgnored public let prefix: String
    /// The storage it reads and writes through.
    @ObservationIgnored public let storage: Storage<Value>
    @ObservationIgnored private let inbox = MainActorInbox<CollectionChange<Value>>()
    @ObservationIgnored private let token: ObservationToken

    /// Follows the keys starting with `prefix` in `storage`, starting from what is stored now (every
    /// such value is read on the main actor: from memory where the store holds it, else from disk).
    /// - Complexity: O(n) in the number of stored keys, plus one read per key under `prefix`.
    public init(prefix: String = "", in storage: Storage<Value>) {
        self.prefix = prefix
        self.storage = storage
        let (inbox, transformer) = (inbox, storage.hybridStorage.diskStorage.transformer)
        let owner = WeakMainActorOwner()
        // Registered before the first read: a change committed meanwhile is applied after it.
        token = storage.observationCenter.addStorageObserver {
            { event in
                guard let change = CollectionChange(event, prefix: prefix, decode: transformer.decode) else { return }
                if inbox.append(change) { owner.scheduleDrain() }
            }
        }
        var loaded: [String: Value] = [:]
        for key in storage.allKeys(withPrefix: prefix) {
            if let entry = try? storage.entry(forKey: key) { loaded[key] = entry.object }
        }
        values = loaded
        owner.drain = { [weak self] in self?.applyReceivedChanges() }
        // Changes received before the drain was set (their scheduled drain found none): apply them now.
        applyReceivedChanges()
    }

    deinit {
        token.cancel()
    }

    /// Stores `value` for `key` (through ``storage``); a key under ``prefix`` shows in ``values`` when
    /// this returns.
    /// - Throws: The errors of `Storage.setObject(_:forKey:expiry:)`.
    public func set(_ value: Value, forKey key: String, expiry: Expiry? = nil) throws {
        try storage.setObject(value, forKey: key, expiry: expiry)
        applyReceivedChanges()
    }

    /// Removes the value for `key`; it is gone from ``values`` when this returns.
    /// - Throws: The errors of `Storage.removeObject(forKey:)`.
    public func remove(forKey key: String) throws {
        try storage.removeObject(forKey: key)
        applyReceivedChanges()
    }

    private func applyReceivedChanges() {
        let changes = inbox.takeAll()
        guard !changes.isEmpty else { return }
        var updated = values  // one change to observe per drain, not one per key
        for change in changes {
            switch change {
            case .set(let key, let value): updated[key] = value
            case .remove(let keys): keys.forEach { updated[$0] = nil }
            }
        }
        values = updated
    }
}

/// What one store event does to the keys under a prefix.
enum CollectionChange<Value: Sendable>: Sendable {
    /// `key` now holds `value`; nil when its bytes do not decode as `Value`.
    case set(key: String, value: Value?)
    case remove(keys: [String])

    /// The change `event` makes under `prefix`; nil when it touches no key there.
    init?(_ event: StoreEvent, prefix: String, decode: (Data) throws -> Value) {
        switch event {
        case .set(let key, let data, _):
            guard key.hasPrefix(prefix) else { return nil }
            self = .set(key: key, value: try? decode(data))
        case .remove(let keys, _), .removeAll(let keys):
            let removed = keys.filter { $0.hasPrefix(prefix) }
            guard !removed.isEmpty else { return nil }
            self = .remove(keys: removed)
        }
    }
}
