public import Foundation

/// Every error Stash throws. Cases with a cause carry it.
public enum StorageError: Error, Sendable, CustomStringConvertible {
    /// No value is stored for `key` (empty when the call that threw did not know it).
    ///
    /// Cache 5's spellings still work: `catch StorageError.notFound`, `if case .notFound = error`,
    /// and ``notFound`` as a value (`#expect(throws: StorageError.notFound)`), which equals every
    /// `notFound(key:)`: errors compare by what went wrong, not by the key they name.
    case notFound(key: String)
    /// The value stored for `key` expired at the given date; `entry(forKey:)` still returns it.
    ///
    /// `key` was added after Cache 5 with a default (empty when the call that threw did not know it), so
    /// `StorageError.expired(date)`, `catch StorageError.expired` and `if case .expired = error` read as
    /// before; bind both values, `case .expired(let date, let key)`. Errors compare without the key.
    case expired(Date, key: String = "")
    /// The stored value is of another type than the one asked for (memory-only views).
    case typeNotMatch
    /// The transformer could not encode the value.
    case encodingFailed(any Error)
    /// The stored bytes are intact but do not decode to the type read (for example, the model changed, or
    /// the key was written through a view of another type); the cause is the transformer's error.
    /// The entry is kept, so another view or the app's migration code can still read it.
    ///
    /// `key` names the value that does not decode (empty when the error did not come from a read of
    /// a key, for example a transformer called by hand). It has a default, so a transformer's
    /// `throw StorageError.decodingFailed(error)` and `catch StorageError.decodingFailed` read as before;
    /// bind both values, `case .decodingFailed(let cause, let key)`. Errors compare without the key.
    case decodingFailed(any Error, key: String = "")
    /// A shipped transformer rejected the data: `TransformerFactory.forImage()` reading bytes that are
    /// no image (the cause is an ``ImageDataError``). Errors of your own transformers arrive as
    /// ``encodingFailed(_:)`` or ``decodingFailed(_:key:)``.
    case transformerFail(any Error)
    /// Stored data is damaged (a truncated value file, an unreadable index record). The entry is dropped.
    case corrupted(String)
    /// The storage was released before the operation could run.
    ///
    /// Kept from hyperoslo/Cache for source compatibility only: Stash keeps a store alive until every
    /// queued operation has run, so it never throws this.
    case deallocated
    /// The key is longer than the disk store accepts (1 MiB of UTF-8), so nothing is stored.
    case keyTooLong(byteCount: Int, limit: Int)
    /// A single value is larger than the disk store's `maxSize`, so it is not stored.
    case valueTooLarge(size: Int, maxSize: Int)
    /// Another process has the store open for writing and keeps it to itself (it was opened without
    /// ``DiskConfig/allowsWritersInOtherProcesses``), or, between writers in several processes, one
    /// held the store's lock for 10 seconds without letting go.
    case inUse(directory: String)
    /// ``DiskConfig/name`` does not name a folder inside ``DiskConfig/directory``: it is empty, absolute,
    /// has a `..` component or a NUL byte. Nothing is opened or created.
    case invalidName(String)
    /// The folder is not empty and Stash did not mark it as a store: nothing in it is touched.
    case notAStore(directory: String)
    /// The store was written by a later version of Stash, whose format this one cannot read.
    case unsupportedFormat(directory: String, format: Int)
    /// The store was opened read-only (``DiskConfig/readOnly``, or a folder this process cannot
    /// write): reads work, writes throw this.
    case readOnly(directory: String)
    /// An expiry that is no usable time: NaN or infinite seconds, a NaN date, or a date past
    /// `Date.distantFuture` (year 4001). Nothing is stored or opened.
    case invalidExpiry(Expiry)
    /// A size or count limit, or a size asked of a trim (`trim(toSize:)`), is negative (`name` says which:
    /// `maxSize`, `countLimit`, `totalCostLimit`, `size`). Nothing is stored, opened or removed.
    case invalidLimit(name: String, value: Int)
    /// The store's folder is already open in this process with another ``DiskConfig/maxSize`` or
    /// ``DiskConfig/durable`` (`setting`): every storage of a folder shares one engine, and the first
    /// opener's settings hold while it is open. `inForce` and `requested` are the two values.
    case configurationConflict(directory: String, setting: String, inForce: String, requested: String)
    /// A call on the store was made from inside the body of one of its own `update` or `transaction`
    /// calls (through any storage or view of the folder): it would write beside the one step the body
    /// is part of. Read and write through the transaction's `tx` instead, or make the call after the
    /// body returns. Nothing was read or written.
    case reentrantCall(directory: String)
    /// A ``StorageTransaction`` was used after its `transaction` body returned (it was kept, or
    /// captured by an escaping closure). Nothing was read or written; start a new transaction.
    case transactionEnded
    /// The ``StorageLocation`` asked for does not exist for this process: an App Group without a
    /// container (the entitlement is missing), or any App Group on a platform without them. The
    /// text says which and what to do. Nothing is opened or created.
    case locationUnavailable(String)
    /// The key begins with U+0001 "stash.", a namespace Stash keeps for its own bookkeeping in a store
    /// (a migration's progress). Writes and removals of such a key throw this; nothing is written.
    case reservedKey(String)
    /// A file-system operation failed; `underlying` is the system's error (for example a `POSIXError`).
    case io(operation: String, path: String, underlying: any Error)

    /// No value is stored for the key: Cache 5's `StorageError.notFound`, equal to every ``notFound(key:)``.
    public static var notFound: StorageError { .notFound(key: "") }

    /// The key the error names: that of ``notFound(key:)``, ``expired(_:key:)`` or
    /// ``decodingFailed(_:key:)``; nil for the other cases, and when the call that threw did not know it.
    public var key: String? {
        switch self {
        case .notFound(let key), .expired(_, let key), .decodingFailed(_, let key): return key.isEmpty ? nil : key
        default: return nil
        }
    }

    /// What a decode of `key`'s bytes threw, as the error naming `key`: a ``StorageError`` naming it
    /// (``naming(_:)``), any other error as ``decodingFailed(_:key:)``.
    package static func reading(_ key: String, failedWith error: any Error) -> StorageError {
        (error as? StorageError)?.naming(key) ?? .decodingFailed(error, key: key)
    }

    /// The same error naming `key`, when it names none yet (what a read of `key` throws).
    package func naming(_ key: String) -> StorageError {
        switch self {
        case .notFound(key: ""): return .notFound(key: key)
        case .expired(let date, key: ""): return .expired(date, key: key)
        case .decodingFailed(let cause, key: ""): return .decodingFailed(cause, key: key)
        default: return self
        }
    }

    public var description: String {
        switch self {
        case .notFound(let key) where key.isEmpty: return "No value is stored for this key"
        case .notFound(let key): return "No value is stored for the key \"\(key)\""
        case .expired(let date, let key) where key.isEmpty: return "The value expired at \(date)"
        case .expired(let date, let key): return "The value of \"\(key)\" expired at \(date)"
        case .typeNotMatch: return "The stored value has another type"
        case .encodingFailed(let error): return "Encoding failed: \(error)"
        case .decodingFailed(let error, let key) where key.isEmpty: return "Decoding failed: \(error)"
        case .decodingFailed(let error, let key): return "The value of \"\(key)\" does not decode: \(error)"
        case .transformerFail(let error): return "The transformer failed: \(error)"
        case .corrupted(let reason): return "Stored data is corrupted: \(reason)"
        case .deallocated: return "The storage was released"
        case .keyTooLong(let byteCount, let limit): return "The key's \(byteCount) bytes exceed the limit of \(limit) bytes"
        case .valueTooLarge(let size, let maxSize):
            return "The value's \(size) bytes exceed the disk limit of \(maxSize) bytes"
        case .inUse(let directory):
            return "The store at \(directory) is in use by another process (a store is written by one process at a time "
                + "unless every writer opens it with DiskConfig.allowsWritersInOtherProcesses; readers open it with DiskConfig.readOnly)"
        case .invalidName(let name):
            return "The store name \"\(name)\" must be a non-empty relative folder path without \"..\" or NUL bytes (it must stay inside the directory)"
        case .notAStore(let directory):
            return "\(directory) is not empty and is not a Stash store; nothing in it was changed"
        case .unsupportedFormat(let directory, let format) where format < 2:
            return "The store at \(directory) has format \(format); open it once for writing (not read-only) to upgrade it"
        case .unsupportedFormat(let directory, let format):
            return "The store at \(directory) has format \(format), which this version of Stash cannot read"
        case .readOnly(let directory): return "The store at \(directory) is open read-only"
        case .invalidExpiry(let expiry):
            return "The expiry \(Self.text(of: expiry)) is no usable time: seconds must be finite, a date neither NaN nor past "
                + "Date.distantFuture (year 4001)"
        case .invalidLimit(let name, let value): return "\(name) must be 0 or more, not \(value)"
        case .configurationConflict(let directory, let setting, let inForce, let requested):
            return "The store at \(directory) is already open in this process with \(setting) \(inForce), not \(requested)"
            + " (every storage of a folder shares the first opener's settings)"
        case .reentrantCall(let directory):
            return "A call on the store at \(directory) was made from inside one of its own update or transaction bodies;"
                + " use the transaction's tx (or the update's inout value) instead, or call after the body returns"
        case .transactionEnded:
            return "The transaction has ended (its body returned); start a new transaction to read or write"
        case .locationUnavailable(let reason): return "The store's location is unavailable: \(reason)"
        case .reservedKey(let key):
            return "The key \(key.debugDescription) begins with U+0001 \"stash.\", which Stash keeps for its own bookkeeping; use another key"
        case .io(let operation, let path, let error): return "\(operation) failed for \(path): \(Self.message(of: error))"
        }
    }

    /// An expiry in words, without describing a `Date` (Foundation traps on a NaN one).
    private static func text(of expiry: Expiry) -> String {
        switch expiry {
        case .never: return ".never"
        case .seconds(let seconds): return ".seconds(\(seconds))"
        case .date(let date): return ".date(\(date.timeIntervalSince1970) s since 1970)"
        }
    }

    /// The system's own words for an error: "Permission denied" rather than a dump of an NSError.
    private static func message(of error: any Error) -> String {
        if let posix = error as? POSIXError { return "\(String(cString: strerror(posix.code.rawValue))) (errno \(posix.code.rawValue))" }
        return error.localizedDescription
    }
}

extension StorageError: LocalizedError {
    public var errorDescription: String? { description }
}
