import Foundation
import StashEngine

/// The front half of a write, written once for every path that stores values on disk
/// (`setObject` of ``DiskStorage`` and ``HybridStorage``, their batches, `update` and transactions):
/// what happens to a value before the engine sees it, and the order in which it is checked.
///
/// For one value: the key must be the app's (not in ``ReservedKeys``), then the expiry (the call's,
/// else the storage's default) is resolved against the clock read once for the write, then the
/// layer's own last check (a ``HybridStorage``'s memory settings), then the transformer makes the
/// bytes. The first check that fails throws and nothing is written. Whether the storage may write at
/// all (``DiskStorage/checkWritable()``) comes before, once per call, so a batch checks it once.
///
/// Its functions are always inlined: called from a storage that is not specialised for its `T` (a
/// call from another module), a `WriteFront<T>` left as a value would cost a look-up of its
/// generic metadata on every write.
struct WriteFront<T: Sendable> {
    let transformer: Transformer<T>
    /// The expiry of a write that names none.
    let defaultExpiry: Expiry
    /// The write's "now": every expiry of one call is resolved against the same instant.
    let now: Date

    /// Throws ``StorageError/reservedKey(_:)`` for a key of Stash's own bookkeeping.
    @inline(__always)
    func check(_ key: String) throws {
        try ReservedKeys.check(key)
    }

    /// `expiry` (nil: the default) as a date, resolved against ``now``.
    /// - Throws: ``StorageError/invalidExpiry(_:)`` for a NaN, infinite or unrepresentable expiry.
    @inline(__always)
    func date(_ expiry: Expiry?) throws -> Date {
        try (expiry ?? defaultExpiry).checkedDate(from: now)
    }

    /// The stored bytes of `object`.
    /// - Throws: What the transformer throws (``StorageError/encodingFailed(_:)``, say).
    @inline(__always)
    func encode(_ object: T) throws -> Data {
        try transformer.encode(object)
    }

    /// One value, ready for the engine: the key checked, the expiry resolved, `lastCheck` run, the
    /// bytes made, in that order.
    @inline(__always)
    func value(_ object: T, forKey key: String, expiry: Expiry?,
               lastCheck: () throws -> Void = {}) throws -> (data: Data, expiry: Date) {
        try check(key)
        let date = try date(expiry)
        try lastCheck()
        return (try encode(object), date)
    }

    /// The changes of `batch` as the engine takes them, each as ``value(_:forKey:expiry:lastCheck:)``
    /// (a removal checks its key), in the batch's order: the first that fails throws.
    func changes(of batch: StorageBatch<T>) throws -> [DiskBatchChange] {
        try batch.changes.map { change in
            switch change {
            case .set(let object, let key, let expiry):
                let (data, date) = try value(object, forKey: key, expiry: expiry)
                return .set(key: key, data: data, expiry: date)
            case .remove(let key):
                try check(key)
                return .remove(key: key)
            }
        }
    }
}

extension DiskStorage {
    /// The front half of this storage's writes made at `now` (its transformer, its default expiry).
    @inline(__always)
    func writeFront(now: Date) -> WriteFront<T> {
        WriteFront(transformer: transformer, defaultExpiry: config.expiry, now: now)
    }

    /// The whole front half of one value's write: the storage may write (``checkWritable()``), then
    /// the value as ``WriteFront/value(_:forKey:expiry:lastCheck:)`` makes it.
    @inline(__always)
    func prepareWrite(_ object: T, forKey key: String, expiry: Expiry?, now: Date,
                      lastCheck: () throws -> Void = {}) throws -> (data: Data, expiry: Date) {
        try checkWritable()
        return try writeFront(now: now).value(object, forKey: key, expiry: expiry, lastCheck: lastCheck)
    }
}
