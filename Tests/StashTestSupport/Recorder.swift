import Stash

/// Values appended from any thread (observer closures, completion handlers, workers), read by the test.
/// A class, so it can also be the observer object `addStorageObserver(_:closure:)` wants.
public final class Recorder<Value: Sendable>: Sendable {
    private let values = Locked<[Value]>([])

    public init() {}

    /// Appends `value`; returns how many values there are now.
    @discardableResult
    public func append(_ value: Value) -> Int {
        values.withLock { values in
            values.append(value)
            return values.count
        }
    }

    /// Everything appended so far, oldest first.
    public var received: [Value] { values.withLock { $0 } }
}
