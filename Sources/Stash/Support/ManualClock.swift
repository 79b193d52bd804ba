public import Foundation
import StashEngine

/// A clock that stands still until you move it: the time source for tests of code that uses Stash.
///
/// Every layer reads "now" from the `now:` function its initialiser takes (Contract item 3), so a
/// test passes ``function`` there and moves the clock instead of sleeping:
///
/// ```swift
/// let clock = ManualClock()
/// let storage = try Storage<User>(diskConfig: DiskConfig(name: "users", directory: folder),
///                                 transformer: TransformerFactory.forCodable(ofType: User.self),
///                                 now: clock.function)
/// try storage.setObject(user, forKey: "me", expiry: .seconds(3600))
/// clock.advance(by: 3601)
/// #expect(try storage.entry(forKey: "me").isExpired)
/// ```
///
/// It may be read and moved from any thread: the storages read it on their own queues.
public final class ManualClock: Sendable {
    /// Where a clock made without a start begins: 2027-01-15T08:00:00Z. A fixed instant keeps runs
    /// reproducible, and a whole second keeps second-precision dates (HTTP's) exact.
    public static let defaultStart = Date(timeIntervalSince1970: 1_800_000_000)

    private let current: Locked<Date>

    /// A clock showing `start` until it is moved.
    public init(_ start: Date = ManualClock.defaultStart) {
        current = Locked(start)
    }

    /// The time the clock shows.
    public var now: Date {
        current.withLock { $0 }
    }

    /// Moves the clock `seconds` ahead (back, when negative).
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 += seconds }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }

    /// The clock as the `now:` function the storages' initialisers take (`now: clock.function`).
    public var function: @Sendable () -> Date {
        { self.now }
    }
}
