import Foundation
import StashEngine

/// A change to a store, as seen by storage observers and ``Storage/changes()``.
public enum StorageChange: Equatable, Sendable {
    /// A value was added or replaced.
    case add(key: String)
    /// A value was removed, by a call or because the disk limit evicted it.
    case remove(key: String)
    /// Every value was removed.
    case removeAll
    /// Expired values were removed.
    case removeExpired
}

/// A change to one key, as seen by key observers and ``Storage/changes(forKey:)``.
public enum KeyChange<T> {
    /// The value was written; `before` is the value it replaced, if any.
    case edit(before: T?, after: T)
    /// The value was removed (by a call, by expiry clean-up, by eviction or by `removeAll`).
    case remove
}

extension KeyChange: Equatable where T: Equatable {}
extension KeyChange: Sendable where T: Sendable {}

extension StoreEvent {
    /// Whether the event touches one of Stash's bookkeeping keys (``ReservedKeys``).
    var touchesReservedKeys: Bool {
        switch self {
        case .set(let key, _, _): return ReservedKeys.contains(key)
        case .remove(let keys, _), .removeAll(let keys): return keys.contains(where: ReservedKeys.contains)
        }
    }

    /// The event without Stash's bookkeeping keys (``ReservedKeys``); nil when it touched only those.
    /// A `removeAll` stays one (observers hear it even of an empty store).
    var withoutReservedKeys: StoreEvent? {
        switch self {
        case .set(let key, _, _): return ReservedKeys.contains(key) ? nil : self
        case .remove(let keys, let reason):
            let kept = ReservedKeys.removing(from: keys)
            return kept.isEmpty && !keys.isEmpty ? nil : .remove(keys: kept, reason: reason)
        case .removeAll(let keys): return .removeAll(keys: ReservedKeys.removing(from: keys))
        }
    }

    /// The changes storage observers see for this event.
    var storageChanges: [StorageChange] {
        switch self {
        case .set(let key, _, _): return [.add(key: key)]
        case .remove(_, .expired): return [.removeExpired]
        case .remove(let keys, _): return keys.map { .remove(key: $0) }
        case .removeAll: return [.removeAll]
        }
    }

    /// The change a key observer of `key` sees, decoding values with `decode`; nil when the event
    /// does not touch `key` or a value does not decode as `T`.
    func keyChange<T>(for key: String, decode: (Data) throws -> T) -> KeyChange<T>? {
        switch self {
        case .set(let changed, let value, let previous):
            guard changed == key, let after = try? decode(value) else { return nil }
            return .edit(before: previous.flatMap { try? decode($0) }, after: after)
        case .remove(let keys, _), .removeAll(let keys):
            return keys.contains(key) ? .remove : nil
        }
    }
}
