import Foundation
import StashEngine

// Batches (``StorageBatch``) on every layer that has a disk: all or none, with one commit.

extension DiskStorage {
    /// Applies every change of `batch`, all or none, with one commit (one `fsync` when durable).
    /// - Throws: What ``setObject(_:forKey:expiry:)`` throws for any of its values (then nothing is
    ///   applied), or, once applied, a failed `fsync` or a trim that could not hold `maxSize`.
    public func write(_ batch: StorageBatch<T>) throws {
        try checkWritable()
        let now = now()
        let changes = try writeFront(now: now).changes(of: batch)
        try engine.writeBatch(changes, now: now, config: config.writeSettings)
    }

    /// Stores every value of `objects`, all or none, with one commit.
    public func setObjects(_ objects: [String: T], expiry: Expiry? = nil) throws {
        try write(.setting(objects, expiry: expiry))
    }

    /// Removes the values of `keys`, all or none, with one commit.
    public func removeObjects(forKeys keys: [String]) throws {
        try write(.removing(keys))
    }
}

extension HybridStorage {
    /// Applies every change of `batch`, all or none, with one commit; memory keeps the values written.
    public func write(_ batch: StorageBatch<T>) throws {
        try diskStorage.checkWritable()
        try cache.config.validate()
        let now = self.now
        let changes = try diskStorage.writeFront(now: now).changes(of: batch)
        try engine.writeBatch(changes, now: now, config: diskStorage.config.writeSettings) { store, paths in
            for (number, change) in changes.enumerated() {
                guard case .set(let key, let data, let expiry) = change, case .set(let object, _, _) = batch.changes[number],
                      store.record(forKey: key)?.expiry == StoredTime.seconds(expiry) else { continue }
                remember(object, forKey: key, cost: data.count, expiry: expiry, filePath: paths[number])
            }
        }
    }

    /// Stores every value of `objects`, all or none, with one commit.
    public func setObjects(_ objects: [String: T], expiry: Expiry? = nil) throws {
        try write(.setting(objects, expiry: expiry))
    }

    /// Removes the values of `keys`, all or none, with one commit.
    public func removeObjects(forKeys keys: [String]) throws {
        try write(.removing(keys))
    }
}

extension Storage {
    /// Applies every change of `batch`, all or none, with one commit (one `fsync` when durable):
    /// after a crash at any moment, a reader sees all of it or none of it.
    ///
    /// ```swift
    /// var batch = StorageBatch<Todo>()
    /// batch.setObject(todo, forKey: "todo.42")
    /// batch.removeObject(forKey: "todo.41")
    /// try storage.write(batch)
    /// ```
    public func write(_ batch: StorageBatch<T>) throws {
        try hybridStorage.write(batch)
    }

    /// Stores every value of `objects`, all or none, with one commit.
    public func setObjects(_ objects: [String: T], expiry: Expiry? = nil) throws {
        try hybridStorage.setObjects(objects, expiry: expiry)
    }

    /// Removes the values of `keys`, all or none, with one commit.
    public func removeObjects(forKeys keys: [String]) throws {
        try hybridStorage.removeObjects(forKeys: keys)
    }
}

extension AsyncStorage {
    /// Applies every change of `batch`, all or none, with one commit, in order with the store's other calls.
    public func write(_ batch: StorageBatch<T>) async throws {
        let storage = innerStorage
        try await perform(AsyncCall(.mutation, key: nil, awaited: true)) { _ in try storage.write(batch) }
    }

    /// Applies every change of `batch`, all or none, with one commit; `completion` runs off the store's queue.
    public func write(_ batch: StorageBatch<T>, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let storage = innerStorage
        submit(AsyncCall(.mutation, key: nil, awaited: false), { _ in try storage.write(batch) }, completion: completion)
    }
}

extension StorageBatch {
    /// A batch that stores every value of `objects`.
    static func setting(_ objects: [String: T], expiry: Expiry?) -> StorageBatch {
        var batch = StorageBatch()
        for (key, object) in objects { batch.setObject(object, forKey: key, expiry: expiry) }
        return batch
    }

    /// A batch that removes `keys`.
    static func removing(_ keys: [String]) -> StorageBatch {
        var batch = StorageBatch()
        for key in keys { batch.removeObject(forKey: key) }
        return batch
    }
}
