import Foundation

@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
extension ObservableValue {
    /// Changes the stored value of ``key`` in place, as one step (through ``storage``:
    /// `Storage.update(forKey:default:expiry:_:)`), and returns it; ``value`` shows it when this returns.
    ///
    /// ```swift
    /// try counter.update(default: 0) { $0 += 1 }
    /// ```
    /// - Parameters:
    ///   - defaultValue: The value `body` starts from when none is stored or it has expired.
    ///   - expiry: The new value's expiry; nil keeps the stored value's.
    ///   - body: Changes the value; it runs on the store's queue and may not call the store.
    /// - Throws: The errors of `Storage.update(forKey:default:expiry:_:)`; nothing is written then.
    @discardableResult
    public func update(default defaultValue: Value? = nil, expiry: Expiry? = nil, _ body: (inout Value) throws -> Void) throws -> Value {
        let updated = try storage.update(forKey: key, default: defaultValue, expiry: expiry, body)
        applyReceivedChanges()
        return updated
    }
}
