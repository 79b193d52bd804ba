public import Stash

extension RedisStorage {
    /// Calls `closure` after every change made through this store or its views in this process.
    ///
    /// Closures run in order on a serial queue of their own, so they may call the store. Delivery
    /// stops when the token is cancelled or `observer` is released.
    @discardableResult
    public func addStorageObserver<O: AnyObject & Sendable>(
        _ observer: O, closure: @escaping @Sendable (O, RedisStorage<T>, StorageChange) -> Void
    ) -> ObservationToken {
        observers.add(forKey: nil) { [weak self, weak observer] event in
            guard let self, let observer else { return false }
            for change in event.storageChanges { closure(observer, self, change) }
            return true
        }
    }

    /// Calls `closure` after every change to `key` made in this process, with values decoded as `T`
    /// (a write whose bytes do not decode as `T` is not delivered).
    @discardableResult
    public func addObserver<O: AnyObject & Sendable>(
        _ observer: O, forKey key: String, closure: @escaping @Sendable (O, RedisStorage<T>, KeyChange<T>) -> Void
    ) -> ObservationToken {
        let key = canonicalKey(key)
        let transformer = transformer
        return observers.add(forKey: key) { [weak self, weak observer] event in
            guard let self, let observer else { return false }
            switch event {
            case .set(_, let value, let previous):
                if let after = try? transformer.decode(value) {
                    closure(observer, self, .edit(before: previous.flatMap { try? transformer.decode($0) }, after: after))
                }
            case .remove, .removeAll: closure(observer, self, .remove)
            case .removeExpired: break
            }
            return true
        }
    }

    /// Removes every storage observer closure.
    public func removeAllStorageObservers() {
        observers.removeAll(forKey: nil)
    }

    /// Removes every observer closure of `key`.
    public func removeObserver(forKey key: String) {
        observers.removeAll(forKey: canonicalKey(key))
    }

    /// Removes every key observer closure.
    public func removeAllKeyObservers() {
        observers.removeAllKeyObservers()
    }

    /// The changes made through this store in this process, as an `AsyncStream`.
    public func changes() -> AsyncStream<StorageChange> {
        let observers = observers
        return AsyncStream { continuation in
            let token = observers.add(forKey: nil) { event in
                for change in event.storageChanges { continuation.yield(change) }
                return true
            }
            continuation.onTermination = { _ in token.cancel() }
        }
    }
}
