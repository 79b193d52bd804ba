public import Foundation

/// When a stored value stops being valid.
///
/// `.seconds(n)` is relative to the moment of the write: Stash resolves it to an absolute date
/// when the value is stored (``resolved(from:)``), so reading the value later never moves it.
public enum Expiry: Sendable, Hashable {
    /// The value never expires.
    case never
    /// The value expires this many seconds after it is written (a finite number; NaN and infinity
    /// are refused with ``StorageError/invalidExpiry(_:)``, use ``never``).
    case seconds(TimeInterval)
    /// The value expires at this date: at most `Date.distantFuture` (year 4001), which reads back as
    /// ``never``; a later or NaN date is refused with ``StorageError/invalidExpiry(_:)``.
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
    /// The stored form of an absolute expiry date: `.never` for exactly `Date.distantFuture` (what
    /// ``never`` resolves to); any other date stays a date (writes refuse dates past it).
    package init(storedDate: Date) {
        self = storedDate == .distantFuture ? .never : .date(storedDate)
    }

    /// Whether this expiry is a usable time at all: `.seconds` finite, `.date` neither NaN nor past
    /// `Date.distantFuture` (year 4001, the stored form of ``never``). Negative seconds and past dates
    /// are valid: the value is simply expired.
    package var isValid: Bool {
        switch self {
        case .never: return true
        case .seconds(let seconds): return seconds.isFinite
        case .date(let date): return date.timeIntervalSince1970.isFinite && date <= .distantFuture
        }
    }

    /// ``resolved(from:)`` for a write at `now`, refusing what cannot be stored faithfully.
    /// - Throws: ``StorageError/invalidExpiry(_:)`` for NaN or infinite seconds, a NaN date, or a
    ///   date (given or computed) past `Date.distantFuture`, which would otherwise read back as `.never`.
    package func checkedDate(from now: Date) throws -> Date {
        guard isValid else { throw StorageError.invalidExpiry(self) }
        let date = resolved(from: now)
        guard date.timeIntervalSince1970.isFinite, date <= .distantFuture else { throw StorageError.invalidExpiry(self) }
        return date
    }
}
