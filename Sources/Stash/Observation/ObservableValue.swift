import Foundation
import StashEngine
public import Observation

/// The value stored for one key, as an `@Observable` object that stays current with the store and
/// writes through to it: for SwiftUI views and other main-actor code.
///
/// ```swift
/// @MainActor struct SettingsView: View {
///     @State var name = ObservableValue("name", in: settings, default: "")
///     var body: some View {
///         @Bindable var name = name
///         TextField("Name", text: Binding($name.value)!)   // or read name.value, name.error
///     }
/// }
/// ```
///
/// ``value`` follows every change to ``key``: writes through this object, through ``storage`` or any
/// typed view of it, through every other `Storage` or `DiskStorage` opened on the same folder in
/// this process, and (with ``DiskConfig/allowsWritersInOtherProcesses`` or read-only) other processes'
/// writes as the store catches up with them. Changes made on other threads reach ``value`` on the
/// main actor, in commit order, a batch at once, shortly after they are committed; a write made through
/// this object shows in ``value`` when the call returns. The object follows the store until it is
/// released: `removeObserver(forKey:)` and `removeAllKeyObservers()` leave it alone.
///
/// A stored value that does not decode as `Value` (the model changed, or another view wrote other
/// bytes) is never a silent nil: ``value`` is nil (or the default) and ``error`` says which key and why.
///
/// Needs the Observation module: macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1 (any Linux toolchain).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class ObservableValue<Value: Sendable> {
    /// The value stored for ``key``; ``defaultValue`` when there is none (or it does not decode:
    /// then ``error`` says so). Setting it writes through to the store (nil removes the key).
    ///
    /// A write that fails leaves `value` as the store has it and puts the failure in ``error``; call
    /// ``set(_:expiry:)`` to have it thrown instead. An expired value is still the stored value (expiry
    /// passes without a change to observe): ask ``storage`` (`objectIfPresent(forKey:)`) when it matters.
    public var value: Value? {
        get { stored ?? defaultValue }
        set { write(newValue) }
    }

    /// What went wrong last, nil when nothing did: the stored bytes do not decode as `Value`
    /// (``StorageError/decodingFailed(_:key:)`` naming ``key``), a
    /// write through ``value`` failed, or the first read failed. The next change that succeeds clears it.
    public private(set) var error: (any Error)?

    /// The decoded value in the store, nil when there is none.
    private var stored: Value?

    /// The key this object follows.
    @ObservationIgnored public let key: String
    /// The storage it reads and writes through.
    @ObservationIgnored public let storage: Storage<Value>
    /// What ``value`` shows while ``key`` holds no value.
    @ObservationIgnored public let defaultValue: Value?
    @ObservationIgnored private let inbox = MainActorInbox<ValueChange<Value>>(keepsLatestOnly: true)
    @ObservationIgnored private let token: ObservationToken
    /// The last commit ``stored`` reflects: changes received up to it are already in the first read.
    @ObservationIgnored private var appliedThrough: UInt64 = 0

    /// Follows `key` in `storage`, starting from the value stored now (read once, on the main actor).
    /// - Parameters:
    ///   - key: The key to follow.
    ///   - storage: The store; the object keeps it open.
    ///   - defaultValue: What ``value`` shows while the key holds no value.
    public init(_ key: String, in storage: Storage<Value>, default defaultValue: Value? = nil) {
        self.key = key
        self.storage = storage
        self.defaultValue = defaultValue
        let (inbox, transformer) = (inbox, storage.hybridStorage.diskStorage.transformer)
        let owner = WeakMainActorOwner()
        // Registered before the first read; protected: the app's `remove…Observers` calls are for its own closures.
        token = storage.observationCenter.addKeyObserver(forKey: key, isProtected: true) {
            { commit in
                guard let change = ValueChange(commit, key: key, decode: transformer.decode) else { return }
                if inbox.append(change) { owner.scheduleDrain() }
            }
        }
        // The first read and the number of the last commit it holds, in one step of the store's queue.
        do {
            let snapshot = try storage.hybridStorage.engine.snapshot(forKey: key, now: storage.hybridStorage.now)
            appliedThrough = snapshot.sequence
            apply(snapshot.data.map { data in Result { try transformer.decode(data) } } ?? .success(nil), key: key)
        } catch {
            self.error = error
        }
        owner.drain = { [weak self] in self?.applyReceivedChanges() }
        // Changes received before the drain was set (their scheduled drain found none): apply them now.
        applyReceivedChanges()
    }

    deinit {
        token.cancel()
    }

    /// Stores `newValue` for ``key`` (through ``storage``); ``value`` shows it when this returns.
    /// - Throws: The errors of `Storage.setObject(_:forKey:expiry:)` (then ``value`` is unchanged).
    public func set(_ newValue: Value, expiry: Expiry? = nil) throws {
        try storage.setObject(newValue, forKey: key, expiry: expiry)
        applyReceivedChanges()
    }

    /// Removes the value for ``key``; ``value`` is the default (or nil) when this returns.
    /// - Throws: The errors of `Storage.removeObject(forKey:)`.
    public func remove() throws {
        try storage.removeObject(forKey: key)
        applyReceivedChanges()
    }

    /// The setter of ``value``: a failure goes to ``error``, and `value` stays what the store has.
    private func write(_ newValue: Value?) {
        do {
            if let newValue { try storage.setObject(newValue, forKey: key) } else { try storage.removeObject(forKey: key) }
            applyReceivedChanges()
        } catch {
            applyReceivedChanges()
            self.error = error
        }
    }

    /// Applies what the store committed since the last drain (internal: writes made by extensions of
    /// this type call it after their own writes, so they show when the call returns).
    func applyReceivedChanges() {
        guard let change = inbox.takeAll().last, change.sequence > appliedThrough else { return }
        appliedThrough = change.sequence
        apply(change.result, key: key)
    }

    private func apply(_ result: Result<Value?, any Error>, key: String) {
        switch result {
        case .success(let value):
            stored = value
            if error != nil { error = nil }
        case .failure(let failure):
            stored = nil
            error = StorageError.reading(key, failedWith: failure)
        }
    }
}

/// What one commit leaves for a key: its decoded value (nil when removed) or why it does not decode.
struct ValueChange<Value: Sendable>: Sendable {
    let sequence: UInt64
    let result: Result<Value?, any Error>

    /// The state `commit` leaves `key` in; nil when it does not touch `key`.
    init?(_ commit: StoreCommit, key: String, decode: (Data) throws -> Value) {
        var last: Result<Value?, any Error>?
        for event in commit.events {
            switch event {
            case .set(let changed, let data, _) where changed == key:
                last = Result { try decode(data) }
            case .remove(let keys, _) where keys.contains(key), .removeAll(let keys) where keys.contains(key):
                last = .success(nil)
            default:
                continue
            }
        }
        guard let last else { return nil }
        (sequence, result) = (commit.sequence, last)
    }
}
