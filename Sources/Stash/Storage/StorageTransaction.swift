import Foundation
import StashEngine

/// The reads and writes of one ``Storage/transaction(_:)``: what its body calls instead of the storage.
///
/// Reads see the transaction's own writes; the writes are kept until the body returns, then
/// committed as one batch (all or none, as ``StorageBatch``), with no other write to the store
/// between the first read and the commit. A body that throws commits nothing.
///
/// A transaction of a read-only storage (``DiskConfig/readOnly``) reads one consistent state of the
/// store, as another process committed it; its writes throw ``StorageError/readOnly(directory:)``.
///
/// A transaction lives only as long as its body: used afterwards (kept, or captured by an escaping
/// closure), every call throws ``StorageError/transactionEnded``. It is not `Sendable`: the body runs
/// on one thread, and so must every call on its `tx`.
public final class StorageTransaction<T: Sendable> {
    /// The front half of the transaction's writes (key check, expiry against the transaction's
    /// "now", bytes): the one every write path shares.
    private let front: WriteFront<T>
    private var now: Date { front.now }
    /// The committed value of a key (memory first, then disk), read on the store's queue; nil when none.
    private let readCommitted: (String) throws -> CommittedValue?
    /// Where in ``states`` each key the transaction wrote is.
    ///
    /// Nothing here names `T`: this code runs unspecialised for the app's type (it is called from
    /// the app's module), where every generic value made or copied cost runtime metadata lookups.
    /// The values are kept in their memory boxes (`ValueBox<T>`), which the commit hands to memory.
    private var slots: [String: Int] = [:]
    private var states: [PendingWrite] = []
    /// The changes, in the order they were made: the batch the transaction commits.
    private(set) var changes: [DiskBatchChange] = []
    private var isOpen = true
    /// The folder of a read-only storage, whose transactions only read; nil when it may write.
    private let refusingWritesIn: String?

    init(front: WriteFront<T>, refusingWritesIn: String?, readCommitted: @escaping (String) throws -> CommittedValue?) {
        self.refusingWritesIn = refusingWritesIn
        self.front = front
        self.readCommitted = readCommitted
    }

    /// Ends the transaction: its public calls throw from now on.
    func end() {
        isOpen = false
    }

    /// The value each key written holds at the end (boxed, as memory keeps it), with the index of
    /// the change that wrote it.
    var finalValues: [(key: String, box: AnyValueBox, size: Int, expiry: Date, change: Int)] {
        slots.compactMap { key, slot in
            guard case .set(let box, let size, let expiry, let change) = states[slot] else { return nil }
            return (key, box, size, expiry, change)
        }
    }

    /// Records what the transaction did to `key` last.
    private func record(_ state: PendingWrite, forKey key: String) {
        if let slot = slots[key] {
            states[slot] = state
        } else {
            slots[key] = states.count
            states.append(state)
        }
    }

    /// The value for `key` as this transaction sees it (its own writes, else the committed value),
    /// expired or not; nil when there is none.
    private func current(_ key: String) throws -> CommittedValue? {
        guard let slot = slots[key] else { return try readCommitted(key) }
        switch states[slot] {
        case .set(let box, _, let expiry, _): return CommittedValue(box: box, expiry: expiry, filePath: nil)
        case .removed: return nil
        }
    }

    // MARK: Reads

    /// The value for `key` with its expiry, as this transaction sees it (its own writes included);
    /// expired values are returned, flagged.
    /// - Throws: ``StorageError/notFound``, ``StorageError/decodingFailed(_:key:)``, ``StorageError/transactionEnded``.
    public func entry(forKey key: String) throws -> Entry<T> {
        try checkOpen()
        guard let found = try current(key) else { throw StorageError.notFound(key: key) }
        return Entry(object: found.box.unboxed(as: T.self), expiry: Expiry(storedDate: found.expiry), filePath: found.filePath,
                     isExpired: now >= found.expiry)
    }

    /// The valid value for `key`, as this transaction sees it.
    /// - Throws: ``StorageError/notFound``, ``StorageError/expired(_:key:)``, ``StorageError/decodingFailed(_:key:)``,
    ///   ``StorageError/transactionEnded``.
    public func object(forKey key: String) throws -> T {
        let entry = try entry(forKey: key)
        if entry.isExpired, case .date(let date) = entry.expiry { throw StorageError.expired(date, key: key) }
        return entry.object
    }

    /// Whether a valid (unexpired) value exists for `key`, as this transaction sees it.
    public func existsObject(forKey key: String) throws -> Bool {
        do {
            return try !entry(forKey: key).isExpired
        } catch StorageError.notFound {
            return false
        }
    }

    // MARK: Writes

    /// Stores `object` for `key` when the transaction commits; later reads in it see `object`.
    /// - Parameters:
    ///   - object: The value to store.
    ///   - key: Its key.
    ///   - expiry: The value's expiry; nil for the storage's default.
    /// - Throws: ``StorageError/encodingFailed(_:)``, ``StorageError/invalidExpiry(_:)``, ``StorageError/transactionEnded``.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        try checkOpen()
        try checkWritable(key)
        try set(object, forKey: key, expiry: front.date(expiry))
    }

    /// Removes `key`'s value when the transaction commits (nothing happens for a key with none).
    public func removeObject(forKey key: String) throws {
        try checkOpen()
        try checkWritable(key)
        changes.append(.remove(key: key))
        record(.removed, forKey: key)
    }

    /// Changes `key`'s value in place, as ``Storage/update(forKey:default:expiry:_:)`` does, inside
    /// this transaction; returns the new value.
    /// - Parameters:
    ///   - key: The key whose value changes.
    ///   - defaultValue: The value `body` starts from when none is stored, or the stored one has expired.
    ///   - expiry: The new value's expiry; nil keeps the stored value's (or, for a new value, the storage's default).
    ///   - body: Changes the value in place; it may read and write through this transaction only.
    /// - Throws: ``StorageError/notFound`` when no value is stored and there is no default; what `body` throws.
    @discardableResult
    public func update(forKey key: String, default defaultValue: T? = nil, expiry: Expiry? = nil,
                       _ body: (inout T) throws -> Void) throws -> T {
        try checkWritable(key)
        let requested = try expiry.map { try front.date($0) }
        try checkOpen()
        var found = try current(key)
        if let stored = found, now >= stored.expiry { found = nil } // expired: starts from the default
        guard var value = found.map({ $0.box.unboxed(as: T.self) }) ?? defaultValue else { throw StorageError.notFound(key: key) }
        try body(&value)
        // The requested expiry, else the stored value's (`distantFuture` for one that never expires),
        // else, for a new value, the storage's default.
        let date = try requested ?? found?.expiry ?? front.date(nil)
        try set(value, forKey: key, expiry: date)
        return value
    }

    private func set(_ object: T, forKey key: String, expiry: Date) throws {
        let data = try front.encode(object)
        record(.set(ValueBox(object), size: data.count, expiry: expiry, change: changes.count), forKey: key)
        changes.append(.set(key: key, data: data, expiry: expiry))
    }

    private func checkOpen() throws {
        if !isOpen { throw StorageError.transactionEnded }
    }

    private func checkWritable(_ key: String) throws {
        try front.check(key)
        if let refusingWritesIn { throw StorageError.readOnly(directory: refusingWritesIn) }
    }
}

/// The committed value of a key as a transaction reads it: its memory box (a `ValueBox` of the
/// transaction's type), its expiry, and its value file's path if it has one.
struct CommittedValue {
    let box: AnyValueBox
    let expiry: Date
    let filePath: String?
}

/// What a transaction has done to a key so far; not generic (see ``StorageTransaction``'s slots).
private enum PendingWrite {
    /// `change` is the index of the change in ``StorageTransaction/changes`` that wrote it last.
    case set(AnyValueBox, size: Int, expiry: Date, change: Int)
    case removed
}
