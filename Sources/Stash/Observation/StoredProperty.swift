import Foundation

/// What the SwiftUI property wrapper ``Stored`` does, apart from SwiftUI, so that every platform's
/// tests run it: a non-optional value for one key, read from an ``ObservableValue`` (its default when
/// the key holds none) and written through it (a failed write leaves the value as the store has it
/// and sets ``error``).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
struct StoredProperty<Value: Sendable>: Sendable {
    /// The object that follows the key (kept by the wrapper's `@State`, so it lives as long as the view).
    let model: ObservableValue<Value>
    /// What ``value`` is while the key holds no value (or one that does not decode).
    let defaultValue: Value

    init(_ key: String, in storage: Storage<Value>, default defaultValue: Value) {
        model = ObservableValue(key, in: storage, default: defaultValue)
        self.defaultValue = defaultValue
    }

    /// The stored value, or the default; setting it writes through to the store.
    var value: Value {
        get { model.value ?? defaultValue }
        nonmutating set { model.value = newValue }
    }

    /// What went wrong last (a value that does not decode, a failed write); nil when nothing did.
    var error: (any Error)? { model.error }
}
