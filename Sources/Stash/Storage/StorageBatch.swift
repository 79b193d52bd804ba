import Foundation
import StashEngine

/// Changes to a store that apply all or none, with one commit: LevelDB's `WriteBatch`, SQLite's
/// transaction.
///
/// ```swift
/// var batch = StorageBatch<Todo>()
/// batch.setObject(todo, forKey: "todo.42")
/// batch.setObject(index, forKey: "todo.index")
/// batch.removeObject(forKey: "todo.41")
/// try storage.write(batch)
/// ```
///
/// After a crash at any moment a reader sees every change of the batch or none of them, and the
/// batch is one append (one `fsync` with ``DiskConfig/durable``). Changes apply in the order they
/// were added, so a later change of a key wins. Observers hear each change, in that order.
public struct StorageBatch<T: Sendable>: Sendable {
    enum Change: Sendable {
        case set(T, key: String, expiry: Expiry?)
        case remove(key: String)
    }

    private(set) var changes: [Change] = []

    /// An empty batch.
    public init() {}

    /// Adds storing `object` for `key` (with `expiry`, or the storage's default).
    public mutating func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) {
        changes.append(.set(object, key: key, expiry: expiry))
    }

    /// Adds removing `key`'s value (nothing happens for a key that has none).
    public mutating func removeObject(forKey key: String) {
        changes.append(.remove(key: key))
    }

    /// The number of changes.
    public var count: Int { changes.count }

    /// Whether the batch holds no change.
    public var isEmpty: Bool { changes.isEmpty }
}
