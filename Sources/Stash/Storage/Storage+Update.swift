import Foundation
import StashEngine

// `update` (read, change, write as one step) and `transaction` (several keys, all or none, isolated)
// on every layer with a disk. Both run in one bracket of the engine (DiskEngine+Bracket.swift).

extension DiskStorage {
    /// Changes the value of `key` in place, as one step; see ``Storage/update(forKey:default:expiry:_:)``.
    @discardableResult
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: (inout T) throws -> Void) throws -> T {
        let now = now()
        return try performUpdate(forKey: key, default: defaultValue, expiry: expiry, now: now, current: { store, expiry in
            do {
                let (data, record, _) = try store.read(key, now: now)
                guard StoredTime.seconds(now) < record.expiry else { return nil } // expired: starts from the default
                let object = try decode(data, key: key)
                expiry = StoredTime.date(record.expiry)
                return object
            } catch StorageError.notFound {
                return nil
            }
        }, body: body)
    }

    /// Runs `body` on the values of several keys and commits its writes as one batch, as one step;
    /// see ``Storage/transaction(_:)``.
    public func transaction<Result>(_ body: (StorageTransaction<T>) throws -> Result) throws -> Result {
        let now = now()
        return try performTransaction(now: now, readCommitted: { store, key in try self.committedValue(key, in: store, now: now) },
                                      body: body)
    }

    /// The bracket of an update, in one turn of the queue (``DiskEngine/bracketOne(_:now:config:_:onCommit:)``):
    /// `current` reads the valid value (nil when missing or expired; its expiry into the `inout` date),
    /// `body` changes it, and the new value is committed as one write of `key`; `onCommit` runs on the
    /// queue with the value written (in the box memory keeps), its size, expiry and file path.
    ///
    /// No `T` crosses the engine's hop, and no tuple or struct holding one is made: this code is not
    /// specialised for the app's type (it is called from another module), and each such type cost a
    /// runtime metadata lookup per call (Docs/Benchmarks.md, "Update and transactions").
    func performUpdate(forKey key: String, default defaultValue: T?, expiry: Expiry?, now: Date,
                       current: (DiskStore, inout Date) throws -> T?, body: (inout T) throws -> Void,
                       onCommit: (DiskStore, AnyValueBox, _ size: Int, _ expiry: Date, _ path: String?) -> Void = { _, _, _, _, _ in })
        throws -> T {
        try checkWritable()
        let front = writeFront(now: now)
        try front.check(key)
        let requested = try expiry.map { try front.date($0) }
        let fallback = try front.date(nil)
        var written: AnyValueBox? // boxed once, for memory as well: no `T?` is made (see above)
        var (size, date) = (0, fallback)
        try engine.bracketOne(key, now: now, config: config.writeSettings) { store in
            var storedExpiry = fallback
            let found = try current(store, &storedExpiry)
            guard var value = found ?? defaultValue else { throw StorageError.notFound(key: key) }
            try engine.runUserCode { try body(&value) }
            let data = try front.encode(value)
            written = ValueBox(value)
            (size, date) = (data.count, requested ?? (found == nil ? fallback : storedExpiry))
            return (data, date)
        } onCommit: { store, path in
            // An already expired value may have been trimmed at once: then there is nothing to follow up.
            guard let value = written, store.record(forKey: key) != nil else { return }
            onCommit(store, value, size, date, path)
        }
        return written.unsafelyUnwrapped.unboxed(as: T.self) // the bracket committed: `body` returned a value
    }

    /// The bracket of a transaction: `body` reads through a ``StorageTransaction`` (its own writes,
    /// else `readCommitted` on the queue) and its writes are committed in the same turn as one batch.
    func performTransaction<Result>(now: Date, readCommitted: @escaping (DiskStore, String) throws -> CommittedValue?,
                                    body: (StorageTransaction<T>) throws -> Result,
                                    onCommit: (DiskStore, StorageTransaction<T>, _ paths: [String?]) -> Void = { _, _, _ in })
        throws -> Result {
        // A read-only storage may read in a transaction (one consistent view of several keys); its writes throw.
        if config.sharing.writes { try checkWritable() } else { try engine.checkOutsideUserCode() }
        let front = writeFront(now: now)
        _ = try front.date(nil) // an unusable default fails before the body runs
        let refusingWritesIn = config.sharing.writes ? nil : engine.directory
        let (result, _) = try engine.bracket(now: now, config: config.writeSettings) { store in
            let transaction = StorageTransaction(front: front, refusingWritesIn: refusingWritesIn,
                                                 readCommitted: { key in try readCommitted(store, key) })
            defer { transaction.end() }
            let result = try engine.runUserCode { try body(transaction) }
            return (transaction.changes, (result, transaction))
        } onCommit: { store, outcome, paths in
            onCommit(store, outcome.1, paths)
        }
        return result
    }

    /// The value stored for `key`, read and decoded on the queue, boxed; nil when there is none.
    func committedValue(_ key: String, in store: DiskStore, now: Date) throws -> CommittedValue? {
        do {
            let (data, record, path) = try store.read(key, now: now)
            return CommittedValue(box: ValueBox(try decode(data, key: key)), expiry: StoredTime.date(record.expiry), filePath: path)
        } catch StorageError.notFound {
            return nil
        }
    }
}

extension HybridStorage {
    /// Changes the value of `key` in place, as one step; see ``Storage/update(forKey:default:expiry:_:)``.
    /// Memory holds the new value afterwards.
    @discardableResult
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: (inout T) throws -> Void) throws -> T {
        try cache.config.validate()
        let now = now
        return try diskStorage.performUpdate(forKey: key, default: defaultValue, expiry: expiry, now: now, current: { store, expiry in
            // Memory first (a copy of this type, or another view's copy that is a `T` all the same), then
            // disk. Not counted as a use of the key: the write that follows records its time of use.
            if let hit = cache.hit(forKey: key, now: now, countsAsUse: false), let object = hit.box.value(as: T.self) {
                guard now < hit.expiry else { return nil } // expired: starts from the default
                expiry = hit.expiry
                return object
            }
            do {
                let (data, record, _) = try store.read(key, now: now)
                guard StoredTime.seconds(now) < record.expiry else { return nil }
                let object = try diskStorage.decode(data, key: key)
                expiry = StoredTime.date(record.expiry)
                return object
            } catch StorageError.notFound {
                return nil
            }
        }, body: body) { _, box, size, expiry, path in
            // Called only when the record is there (an already expired value may have been trimmed at
            // once; memory never holds what disk lost).
            remember(box, forKey: key, cost: size, expiry: expiry, filePath: path)
        }
    }

    /// Runs `body` on the values of several keys and commits its writes as one batch, as one step;
    /// see ``Storage/transaction(_:)``. Memory holds the values written afterwards.
    public func transaction<Result>(_ body: (StorageTransaction<T>) throws -> Result) throws -> Result {
        try cache.config.validate()
        let now = now
        return try diskStorage.performTransaction(now: now, readCommitted: { store, key in
            try self.committedValue(key, in: store, now: now)
        }, body: body) { store, transaction, paths in
            for written in transaction.finalValues where store.record(forKey: written.key)?.expiry == StoredTime.seconds(written.expiry) {
                remember(written.box, forKey: written.key, cost: written.size, expiry: written.expiry, filePath: paths[written.change])
            }
        }
    }

    /// The value of `key` as the queue sees it, memory first, then disk (remembered); nil when none.
    /// Its box is the one memory keeps (a `ValueBox<T>`): no copy of the value is made here.
    private func committedValue(_ key: String, in store: DiskStore, now: Date) throws -> CommittedValue? {
        if let item = cache.item(forKey: key, now: now) {
            if ObjectIdentifier(type(of: item.object)) == ObjectIdentifier(ValueBox<T>.self) {
                return CommittedValue(box: item.object, expiry: item.expiry, filePath: item.filePath)
            }
            // Another view's copy: a hit only if its value is a `T` all the same (then boxed as one).
            if let object = item.object.value(as: T.self) {
                return CommittedValue(box: ValueBox(object), expiry: item.expiry, filePath: item.filePath)
            }
        }
        do {
            let (data, record, path) = try store.read(key, now: now)
            let box = ValueBox(try diskStorage.decode(data, key: key))
            let expiry = StoredTime.date(record.expiry)
            remember(box, forKey: key, cost: data.count, expiry: expiry, filePath: path)
            return CommittedValue(box: box, expiry: expiry, filePath: path)
        } catch StorageError.notFound {
            return nil
        }
    }
}

extension Storage {
    /// Changes the value of `key` in place and returns the new value: the read, `body` and the write
    /// are one step.
    ///
    /// ```swift
    /// let count = try counters.update(forKey: "launches", default: 0) { $0 += 1 }
    /// try todos.update(forKey: "inbox", default: []) { $0.append(todo) }
    /// ```
    ///
    /// No other write to the store lands between the read and the write: not from another thread,
    /// another `Storage` or view of the folder, nor, with ``DiskConfig/allowsWritersInOtherProcesses``,
    /// another process. So concurrent updates lose nothing (eight threads adding 1,000 each leave
    /// 8,000). The new value is committed as a batch of one (a kill leaves the old value or the new),
    /// observers hear one change, and memory holds the new value afterwards.
    ///
    /// `body` runs on the store's queue (keep it short: other calls on the store wait for it) and
    /// may not call the store: any call on it, through any storage or view of the folder, throws
    /// ``StorageError/reentrantCall(directory:)``; the value to change is `body`'s argument. A `body`
    /// that throws writes nothing, and its error is rethrown.
    ///
    /// - Parameters:
    ///   - key: The key whose value changes.
    ///   - defaultValue: The value `body` starts from when none is stored or the stored one has
    ///     expired (an expired value counts as missing); without one, a missing value throws.
    ///   - expiry: The new value's expiry; nil keeps the stored value's expiry (a new value gets the
    ///     storage's default), as Redis's `INCR` keeps a key's time to live.
    ///   - body: Changes the value in place.
    /// - Returns: The value written.
    /// - Throws: ``StorageError/notFound`` when no valid value is stored and `defaultValue` is nil;
    ///   ``StorageError/decodingFailed(_:key:)`` when the stored bytes do not decode (nothing is written:
    ///   migrate first); what `body` throws; the errors of `setObject(_:forKey:expiry:)`.
    @discardableResult
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: (inout T) throws -> Void) throws -> T {
        try hybridStorage.update(forKey: key, default: defaultValue, expiry: expiry, body)
    }

    /// Runs `body` on the values of several keys and commits what it wrote as one batch: reads see the
    /// transaction's own writes, and nothing else writes to the store from the first read to the commit.
    ///
    /// ```swift
    /// try accounts.transaction { tx in
    ///     let from = try tx.object(forKey: "alice")
    ///     try tx.setObject(from - 10, forKey: "alice")
    ///     try tx.update(forKey: "bob", default: 0) { $0 += 10 }
    /// }
    /// ```
    ///
    /// Isolated as ``update(forKey:default:expiry:_:)`` is (threads, every storage of the folder, and
    /// writers in other processes), and all or none as a ``StorageBatch``: a kill at any moment leaves
    /// every write of it or none, and a `body` that throws writes nothing (its error is rethrown).
    /// Observers hear each change in order once it is committed; memory holds the values written.
    ///
    /// `body` runs on the store's queue and may call only `tx`: a call on the store itself (any
    /// storage or view of the folder, including a nested `transaction` or `update`) throws
    /// ``StorageError/reentrantCall(directory:)``; `tx` used after `body` returns throws
    /// ``StorageError/transactionEnded``. Reads that cannot throw (`allKeys`, `totalSize`) answer
    /// what is committed. Keep `body` short and free of waits: other calls on the store wait for it.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws; the batch's errors (nothing is written then).
    public func transaction<Result>(_ body: (StorageTransaction<T>) throws -> Result) throws -> Result {
        try hybridStorage.transaction(body)
    }
}

extension AsyncStorage {
    /// Changes the value of `key` in place and returns the new value, in order with the store's other
    /// calls; as ``Storage/update(forKey:default:expiry:_:)``, whose rules `body` follows.
    @discardableResult
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: @escaping @Sendable (inout T) throws -> Void) async throws -> T {
        let storage = innerStorage
        return try await perform(AsyncCall(.mutation, key: key, awaited: true)) { _ in
            try storage.update(forKey: key, default: defaultValue, expiry: expiry, body)
        }
    }

    /// Changes the value of `key` in place; `completion` gets the new value, off the store's queue.
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: @escaping @Sendable (inout T) throws -> Void,
                       completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let storage = innerStorage
        submit(AsyncCall(.mutation, key: key, awaited: false), { _ in
            try storage.update(forKey: key, default: defaultValue, expiry: expiry, body)
        }, completion: completion)
    }

    /// Runs `body` as ``Storage/transaction(_:)`` does, in order with the store's other calls.
    public func transaction<Value: Sendable>(_ body: @escaping @Sendable (StorageTransaction<T>) throws -> Value) async throws -> Value {
        let storage = innerStorage
        return try await perform(AsyncCall(.mutation, key: nil, awaited: true)) { _ in try storage.transaction(body) }
    }

    /// Runs `body` as ``Storage/transaction(_:)`` does; `completion` gets its result, off the store's queue.
    public func transaction<Value: Sendable>(_ body: @escaping @Sendable (StorageTransaction<T>) throws -> Value,
                                             completion: @escaping @Sendable (Result<Value, any Error>) -> Void) {
        let storage = innerStorage
        submit(AsyncCall(.mutation, key: nil, awaited: false), { _ in try storage.transaction(body) }, completion: completion)
    }
}
