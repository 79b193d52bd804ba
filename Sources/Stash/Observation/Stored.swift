#if canImport(SwiftUI)
public import SwiftUI

/// A stored value as a SwiftUI property: reads the value of a key, follows every change to it, and
/// writes through when set; `$name` is a `Binding` for a `TextField` or `Toggle`.
///
/// ```swift
/// struct SettingsView: View {
///     @Stored("name", in: settings) var name = ""
///     var body: some View { TextField("Name", text: $name) }
/// }
/// ```
///
/// A thin shell around ``ObservableValue`` (kept in `@State`, so it lives as long as the view; its
/// logic is `StoredProperty`, which every platform's tests run): the value is the stored one, or the
/// initial value while the key holds none (nothing is stored until the property is set); a write
/// that fails leaves the value as the store has it (an ``ObservableValue`` of the key says why).
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@propertyWrapper
public struct Stored<Value: Sendable>: DynamicProperty {
    @State private var stored: StoredProperty<Value>

    /// Follows `key` in `storage`, showing `defaultValue` while the key holds no value.
    /// - Parameters:
    ///   - defaultValue: The property's initial value: what it shows while nothing is stored.
    ///   - key: The key to follow.
    ///   - storage: The store; the property keeps it open.
    public init(wrappedValue defaultValue: Value, _ key: String, in storage: Storage<Value>) {
        _stored = State(initialValue: StoredProperty(key, in: storage, default: defaultValue))
    }

    /// The stored value, or the initial value while none is stored; setting it writes through.
    public var wrappedValue: Value {
        get { stored.value }
        nonmutating set { stored.value = newValue }
    }

    /// A binding to the value, for controls that edit it.
    public var projectedValue: Binding<Value> {
        let stored = stored
        // SwiftUI calls a binding on the main actor; its closures need not be isolated to it.
        return Binding(get: { MainActor.assumeIsolated { stored.value } },
                       set: { newValue in MainActor.assumeIsolated { stored.value = newValue } })
    }
}
#endif
