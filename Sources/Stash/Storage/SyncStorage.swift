import Foundation

/// The blocking, throwing API of a store; ``Storage`` forwards to it.
///
/// Each call runs on the store's serial queue (a memory hit is served under the memory layer's
/// lock), so calls from any thread are linearizable. A call made from the queue itself (for
/// example inside a transformer) runs inline instead of deadlocking.
public final class SyncStorage<T: Sendable>: StorageAware, Sendable {
    let innerStorage: HybridStorage<T>

    /// Wraps a hybrid storage.
    public init(storage: HybridStorage<T>) {
        innerStorage = storage
    }

    public var allKeys: [String] { innerStorage.allKeys }

    public func entry(forKey key: String) throws -> Entry<T> {
        try innerStorage.entry(forKey: key)
    }

    public func object(forKey key: String) throws -> T {
        try innerStorage.object(forKey: key)
    }

    public func existsObject(forKey key: String) throws -> Bool {
        try innerStorage.existsObject(forKey: key)
    }

    public func isExpiredObject(forKey key: String) throws -> Bool {
        try innerStorage.isExpiredObject(forKey: key)
    }

    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        try innerStorage.setObject(object, forKey: key, expiry: expiry)
    }

    public func removeObject(forKey key: String) throws {
        try innerStorage.removeObject(forKey: key)
    }

    public func removeAll() throws {
        try innerStorage.removeAll()
    }

    public func removeExpiredObjects() throws {
        try innerStorage.removeExpiredObjects()
    }
}
