public import Foundation

/// When a stored value stops being valid.
///
/// `.seconds(n)` is relative to the moment of the write: Stash resolves it to an absolute date
/// when the value is stored (``resolved(from:)``), so reading the value later never moves it.
public enum Expiry: Sendable, Hashable {
    /// The value never expires.
    case never
    /// The value expires this many seconds after it is written.
    case seconds(TimeInterval)
    /// The value expires at this date.
    case date(Date)

    /// The absolute expiry date for a value written at `now`; `Date.distantFuture` for ``never``.
    public func resolved(from now: Date) -> Date {
        switch self {
        case .never: return .distantFuture
        case .seconds(let seconds): return now.addingTimeInterval(seconds)
        case .date(let date): return date
        }
    }
}

/// A stored value with its metadata, as returned by `entry(forKey:)`.
///
/// Unlike `object(forKey:)`, `entry(forKey:)` also returns expired values, flagged by
/// ``isExpired``, so offline code can show stale data knowingly.
public struct Entry<T> {
    /// The stored value.
    public let object: T
    /// The absolute expiry, always `.date(...)` (or `.never`) once stored.
    public let expiry: Expiry
    /// The file holding the value's bytes (exactly the transformer's output), when it is on disk.
    public let filePath: String?
    /// Whether the value had expired when the entry was read.
    public let isExpired: Bool

    /// Creates an entry.
    public init(object: T, expiry: Expiry, filePath: String? = nil, isExpired: Bool = false) {
        self.object = object
        self.expiry = expiry
        self.filePath = filePath
        self.isExpired = isExpired
    }
}

extension Entry: Sendable where T: Sendable {}

extension Expiry {
    /// The stored form of an absolute expiry date: `.never` for the distant future.
    init(storedDate: Date) {
        self = storedDate >= .distantFuture ? .never : .date(storedDate)
    }
}
