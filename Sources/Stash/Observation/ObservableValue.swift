import Foundation
public import Observation

/// The value stored for one key, as an `@Observable` object that stays current with the store: for
/// SwiftUI views and other main-actor code.
///
/// ```swift
/// @MainActor struct ProfileView: View {
///     @State var profile = ObservableValue("me", in: users)
///     var body: some View { Text(profile.value?.name ?? "Nobody") }
/// }
/// ```
///
/// ``value`` follows every change to ``key``: writes through this object, through ``storage`` or any
/// typed view of it, and through every other `Storage` or `DiskStorage` opened on the same folder in
/// this process (they share one engine and one set of observers). Changes made on other threads
/// reach ``value`` on the main actor, in commit order, shortly after they are committed; a write made
/// through ``set(_:expiry:)`` or ``remove()`` shows in ``value`` when the call returns.
///
/// SwiftUI needs no code of its own: the type is `@Observable`, so views that read ``value`` are
/// updated, and outside SwiftUI `withObservationTracking` tells when it changes.
///
/// Needs the Observation module: macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1 (any Linux toolchain).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class ObservableValue<Value: Sendable> {
    /// The value stored for ``key``, nil when there is none.
    ///
    /// An expired value is still the stored value (expiry passes without a change to observe): ask
    /// ``storage`` (`entry(forKey:)`, `isExpiredObject(forKey:)`) when expiry matters. A value written
    /// through a view of another type, whose bytes do not decode as `Value`, shows as nil.
    public private(set) var value: Value?

    /// The key this object follows.
    @ObservationIgnored public let key: String
    /// The storage it reads and writes through.
    @ObservationIgnored public let storage: Storage<Value>
    @ObservationIgnored private let inbox = MainActorInbox<Value?>(keepsLatestOnly: true)
    @ObservationIgnored private let token: ObservationToken

    /// Follows `key` in `storage`, starting from the value stored now (read on the main actor, so
    /// from memory when the store holds it there, else from disk).
    /// - Parameters:
    ///   - key: The key to follow.
    ///   - storage: The store; the object keeps it open.
    public init(_ key: String, in storage: Storage<Value>) {
        self.key = key
        self.storage = storage
        let (inbox, transformer) = (inbox, storage.hybridStorage.diskStorage.transformer)
        let owner = WeakMainActorOwner()
        // Registered before the first read: a change committed meanwhile is applied after it.
        token = storage.observationCenter.addKeyObserver(forKey: key) {
            { event in
                guard let change = Self.value(after: event, key: key, decode: transformer.decode) else { return }
                if inbox.append(change) { owner.scheduleDrain() }
            }
        }
        value = try? storage.entry(forKey: key).object
        owner.drain = { [weak self] in self?.applyReceivedChanges() }
        // Changes received before the drain was set (their scheduled drain found none): apply them now.
        applyReceivedChanges()
    }

    deinit {
        token.cancel()
    }

    /// Stores `newValue` for ``key`` (through ``storage``); ``value`` shows it when this returns.
    /// - Throws: The errors of `Storage.setObject(_:forKey:expiry:)`.
    public func set(_ newValue: Value, expiry: Expiry? = nil) throws {
        try storage.setObject(newValue, forKey: key, expiry: expiry)
        applyReceivedChanges()
    }

    /// Removes the value for ``key``; ``value`` is nil when this returns.
    /// - Throws: The errors of `Storage.removeObject(forKey:)`.
    public func remove() throws {
        try storage.removeObject(forKey: key)
        applyReceivedChanges()
    }

    func applyReceivedChanges() { // internal: ObservableValue+Update.swift applies an update at once too
        let changes = inbox.takeAll()
        if let last = changes.last { value = last }
    }

    /// The value `event` leaves for `key`: `.some(nil)` when it removes it (or stores bytes that do not
    /// decode), nil when it does not touch `key`.
    nonisolated private static func value(after event: StoreEvent, key: String, decode: (Data) throws -> Value) -> Value?? {
        switch event {
        case .set(let changed, let data, _):
            guard changed == key else { return nil }
            return .some(try? decode(data))
        case .remove(let keys, _), .removeAll(let keys):
            return keys.contains(key) ? .some(nil) : nil
        }
    }
}
