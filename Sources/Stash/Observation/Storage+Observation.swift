import Foundation

extension Storage {
    /// Calls `closure` after every change to the store, through any view or storage of its folder.
    ///
    /// Closures are called before the mutating call returns (before its completion runs, for the
    /// async API), on the calling thread or on the thread delivering an earlier change, in commit
    /// order, and never on the store's queue, so they may call this storage or another one. A call
    /// made from inside an observer closure never waits for another thread's delivery: its change is
    /// delivered right after that closure returns (this store), before the call returns (a store no
    /// thread is delivering), or by the thread delivering that store's changes, before the outermost
    /// call of this thread returns. So observers writing into each other's stores cannot deadlock
    /// (Docs/Architecture.md, "Threads and queues"). Delivery stops when the
    /// token is cancelled, when `observer` is released, or when this storage is released; a change
    /// committed while the observer was alive still reaches it.
    /// - Returns: A token whose ``ObservationToken/cancel()`` stops the observation.
    @discardableResult
    public func addStorageObserver<O: AnyObject & Sendable>(
        _ observer: O,
        closure: @escaping @Sendable (O, Storage<T>, StorageChange) -> Void
    ) -> ObservationToken {
        observers.addStorageObserver { [weak self, weak observer] in
            guard let self, let observer else { return nil }
            return { commit in
                for event in commit.events {
                    for change in event.storageChanges { closure(observer, self, change) }
                }
            }
        }
    }

    /// Calls `closure` after every change to `key`, with values decoded as `T`; delivered as
    /// ``addStorageObserver(_:closure:)`` describes.
    ///
    /// A write whose bytes do not decode as `T` (made through a view of another type) is not delivered.
    /// - Returns: A token whose ``ObservationToken/cancel()`` stops the observation.
    @discardableResult
    public func addObserver<O: AnyObject & Sendable>(
        _ observer: O,
        forKey key: String,
        closure: @escaping @Sendable (O, Storage<T>, KeyChange<T>) -> Void
    ) -> ObservationToken {
        let transformer = hybridStorage.diskStorage.transformer
        return observers.addKeyObserver(forKey: key) { [weak self, weak observer] in
            guard let self, let observer else { return nil }
            return { commit in
                for event in commit.events {
                    if let change = event.keyChange(for: key, decode: transformer.decode) { closure(observer, self, change) }
                }
            }
        }
    }

    /// Removes every storage observer closure of the store (``changes()`` streams end only when dropped;
    /// ``ObservableCollection`` objects follow the store until released).
    public func removeAllStorageObservers() {
        observers.removeAllStorageObservers()
    }

    /// Removes every observer closure of `key` (``changes(forKey:)`` streams end only when
    /// dropped; ``ObservableValue`` objects follow the store until released).
    public func removeObserver(forKey key: String) {
        observers.removeKeyObservers(forKey: key)
    }

    /// Removes every key observer closure of the store (streams end only when dropped;
    /// ``ObservableValue`` objects follow the store until released).
    public func removeAllKeyObservers() {
        observers.removeAllKeyObservers()
    }

    /// The store's changes as an `AsyncStream`, from now until the stream is dropped or cancelled.
    ///
    /// ```swift
    /// for await change in storage.changes() { … }
    /// ```
    public func changes() -> AsyncStream<StorageChange> {
        let observers = observers
        return AsyncStream { continuation in
            let token = observers.addStorageObserver(isProtected: true) {
                { commit in
                    for event in commit.events {
                        for change in event.storageChanges { continuation.yield(change) }
                    }
                }
            }
            continuation.onTermination = { _ in token.cancel() }
        }
    }

    /// The changes to `key`, values decoded as `T`, as an `AsyncStream`.
    public func changes(forKey key: String) -> AsyncStream<KeyChange<T>> {
        let observers = observers
        let transformer = hybridStorage.diskStorage.transformer
        return AsyncStream { continuation in
            let token = observers.addKeyObserver(forKey: key, isProtected: true) {
                { commit in
                    for event in commit.events {
                        if let change = event.keyChange(for: key, decode: transformer.decode) { continuation.yield(change) }
                    }
                }
            }
            continuation.onTermination = { _ in token.cancel() }
        }
    }

    private var observers: ObservationCenter { hybridStorage.engine.observers }
}
