import Foundation
import StashEngine
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
/// ``values`` on the main actor, in commit order, shortly after they are committed, a batch at once
/// (never half of one); a change made through ``set(_:forKey:expiry:)`` or ``remove(forKey:)`` shows
/// when the call returns. The object follows the store until it is released:
/// `removeAllStorageObservers()` leaves it alone. Keys whose bytes do not decode are in ``errors``.
///
/// Needs the Observation module: macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1 (any Linux toolchain).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class ObservableCollection<Value: Sendable> {
    /// The stored values whose keys start with ``prefix``, by key. Expired values are included (expiry
    /// passes without a change to observe); a key whose bytes do not decode as `Value` is in ``errors``
    /// instead.
    public private(set) var values: [String: Value] = [:]

    /// The keys under ``prefix`` whose stored bytes do not decode as `Value` (the model changed, or
    /// another view wrote them), each with its ``StorageError/decodingFailed(_:key:)``: nothing stored is
    /// left out silently. A key leaves it when it is rewritten with a value that decodes, or removed.
    /// When the store could not be read at all when the object was made, ``prefix`` itself holds
    /// that error (an ``StorageError/io(operation:path:underlying:)``, say).
    public private(set) var errors: [String: any Error] = [:]

    /// The keys of ``values`` in key order, the order of ``Storage/allKeys(withPrefix:)`` (the Unicode
    /// scalars of the keys' NFC spellings): rows for a list.
    public var sortedKeys: [String] { KeyOrdering.sorted(values.keys) }

    /// The prefix of the keys this object follows.
    @ObservationIgnored public let prefix: String
    /// The storage it reads and writes through.
    @ObservationIgnored public let storage: Storage<Value>
    @ObservationIgnored private let inbox = MainActorInbox<CollectionChange<Value>>()
    @ObservationIgnored private let token: ObservationToken
    /// The last commit ``values`` reflects: changes received up to it are already in the first read.
    @ObservationIgnored private var appliedThrough: UInt64 = 0

    /// Follows the keys starting with `prefix` in `storage`, starting from what is stored now (read in
    /// one step of the store's queue, so one state of the store, and decoded on the main actor).
    /// - Complexity: O(n) in the number of stored keys, plus one read and one decode per key under `prefix`.
    public init(prefix: String = "", in storage: Storage<Value>) {
        self.prefix = prefix
        self.storage = storage
        let (inbox, transformer) = (inbox, storage.hybridStorage.diskStorage.transformer)
        let owner = WeakMainActorOwner()
        // Registered before the first read; protected: `removeAllStorageObservers()` is for the app's own closures.
        token = storage.observationCenter.addStorageObserver(isProtected: true) {
            { commit in
                guard let change = CollectionChange(commit, prefix: prefix, decode: transformer.decode) else { return }
                if inbox.append(change) { owner.scheduleDrain() }
            }
        }
        var (loaded, failed): ([String: Value], [String: any Error]) = ([:], [:])
        do {
            let snapshot = try storage.hybridStorage.engine.snapshot(withPrefix: prefix, now: storage.hybridStorage.now)
            appliedThrough = snapshot.sequence
            for record in snapshot.records {
                do {
                    loaded[record.key] = try transformer.decode(record.data)
                } catch {
                    failed[record.key] = StorageError.reading(record.key, failedWith: error)
                }
            }
        } catch {
            failed[prefix] = error // the store could not be read at all
        }
        (values, errors) = (loaded, failed)
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

    /// Applies every commit received since the last drain, each whole (internal: writes made by
    /// extensions of this type call it after their own writes).
    func applyReceivedChanges() {
        let commits = inbox.takeAll().filter { $0.sequence > appliedThrough }
        guard let last = commits.last else { return }
        appliedThrough = last.sequence
        var (updated, failed) = (values, errors) // one change to observe per drain, not one per key
        for commit in commits {
            for edit in commit.edits {
                switch edit {
                case .set(let key, .success(let value)):
                    updated[key] = value
                    failed[key] = nil
                case .set(let key, .failure(let error)):
                    updated[key] = nil
                    failed[key] = StorageError.reading(key, failedWith: error)
                case .remove(let keys):
                    for key in keys { (updated[key], failed[key]) = (nil, nil) }
                }
            }
        }
        values = updated
        if !(errors.isEmpty && failed.isEmpty) { errors = failed }
    }
}

/// What one commit does to the keys under a prefix, in order.
struct CollectionChange<Value: Sendable>: Sendable {
    enum Edit: Sendable {
        /// `key` now holds the decoded value, or bytes that do not decode as `Value`.
        case set(key: String, Result<Value, any Error>)
        case remove(keys: [String])
    }

    let sequence: UInt64
    let edits: [Edit]

    /// The edits `commit` makes under `prefix`; nil when it touches no key there.
    init?(_ commit: StoreCommit, prefix: String, decode: (Data) throws -> Value) {
        var edits: [Edit] = []
        for event in commit.events {
            switch event {
            case .set(let key, let data, _):
                guard key.hasPrefix(prefix) else { continue }
                edits.append(.set(key: key, Result { try decode(data) }))
            case .remove(let keys, _), .removeAll(let keys):
                let removed = keys.filter { $0.hasPrefix(prefix) }
                if !removed.isEmpty { edits.append(.remove(keys: removed)) }
            }
        }
        guard !edits.isEmpty else { return nil }
        (sequence, self.edits) = (commit.sequence, edits)
    }
}
