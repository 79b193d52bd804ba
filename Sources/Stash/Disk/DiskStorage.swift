public import Foundation
import StashEngine

/// A persistent store: small values packed into checksummed, append-only segment files, large ones
/// (or all, with ``DiskConfig/storesValuesAsFiles``) in files of their own. Usable on its own; inside
/// a ``Storage`` it is the layer behind memory.
///
/// ```swift
/// let disk = try DiskStorage(config: DiskConfig(name: "Users", maxSize: 50_000_000),
///                            transformer: TransformerFactory.forCodable(ofType: User.self))
/// try disk.setObject(user, forKey: "me")
/// ```
/// Every storage opened on the same folder in a process shares one engine (one serial queue, one
/// index), so they see each other's writes. Another process opening the folder meanwhile gets
/// ``StorageError/inUse(directory:)``.
public final class DiskStorage<T: Sendable>: StorageAware, Sendable {
    /// The configuration in force.
    public let config: DiskConfig
    /// The transformer between values and the stored bytes.
    public let transformer: Transformer<T>
    let engine: DiskEngine
    let now: @Sendable () -> Date

    /// Opens (creating if needed) the store at ``DiskConfig/storeURL``.
    /// - Parameters:
    ///   - config: Where the store lives, its size limit and default expiry.
    ///   - transformer: Converts values to the stored bytes and back.
    ///   - now: The clock that expiry and last access are measured against.
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when the folder cannot be created or
    ///   read, ``StorageError/inUse(directory:)`` when another process has it open,
    ///   ``StorageError/invalidName(_:)`` when ``DiskConfig/name`` would leave ``DiskConfig/directory``,
    ///   ``StorageError/invalidLimit(name:value:)`` or ``StorageError/invalidExpiry(_:)`` for unusable
    ///   settings, ``StorageError/configurationConflict(directory:setting:inForce:requested:)`` when the
    ///   folder is already open in this process with another ``DiskConfig/maxSize`` or ``DiskConfig/durable``.
    public convenience init(config: DiskConfig, transformer: Transformer<T>, now: @escaping @Sendable () -> Date = { Date() }) throws {
        try config.validate()
        let engine = try Self.openEngine(config)
        // Once the folder is this store's (created, locked): its class, then its files' (Apple's mobile platforms only).
        if config.sharing.writes { try StoreProtection.apply(config.protectionType, toFolder: engine.directory) }
        self.init(config: config, transformer: transformer, engine: engine, now: now)
    }

    /// The engine of `config`'s folder, with the layers above it (``StoreLayers``): the one way an
    /// engine is opened, so that every engine has them.
    static func openEngine(_ config: DiskConfig) throws -> DiskEngine {
        let engine = try DiskEngine.open(config.checkedStoreURL(), sharing: config.sharing, maxSize: config.maxSize, durable: config.durable,
                                         mapsSegments: config.protectionType?.allowsMappedReads ?? true) {
            StoreLayers()
        }
        engine.observers.callWhenRegistrationsChange { [weak engine] in engine?.observersChanged() }
        return engine
    }

    init(config: DiskConfig, transformer: Transformer<T>, engine: DiskEngine, now: @escaping @Sendable () -> Date) {
        self.config = config
        self.transformer = transformer
        self.engine = engine
        self.now = now
    }

    /// Throws ``StorageError/readOnly(directory:)`` for a storage opened read-only (which may share
    /// the engine of a writable storage of the same folder in this process).
    /// Also throws ``StorageError/reentrantCall(directory:)`` inside an `update` or `transaction` body.
    func checkWritable() throws {
        try engine.checkOutsideUserCode()
        if !config.sharing.writes { throw StorageError.readOnly(directory: engine.directory) }
    }

    /// The store's folder; for an in-memory store (``Storage/inMemory(name:memoryConfig:transformer:now:)``),
    /// a path under `/dev/null/stash-in-memory/` that says so and names nothing on disk.
    public var path: String { engine.directory }

    /// Every stored key, expired ones included; Stash's own bookkeeping keys (``StorageMigrator/reservedKeyPrefix``) are left out.
    public var allKeys: [String] { ReservedKeys.removing(from: engine.sync { $0.keys }) }

    /// The bytes of all stored values.
    public var totalSize: Int { engine.sync { $0.storedBytes } }

    /// How many values are stored, and how many of them have expired by `date`, counted without
    /// listing a key (what `stash stats` shows).
    public func counts(expiredBy date: Date) -> (entries: Int, expired: Int) {
        let cutoff = StoredTime.seconds(date)
        return engine.sync { store in
            // Stash's bookkeeping (never expiring) is no entry of the app's.
            let bookkeeping = store.record(forKey: ReservedKeys.migrationProgress) == nil ? 0 : 1
            return store.withIndex { index in
                var expired = 0
                if cutoff >= store.expiryLowerBound { index.forEachValue { if cutoff >= $0.expiry { expired += 1 } } }
                return (index.count - bookkeeping, expired)
            }
        }
    }

    /// What opening the store found damaged and dropped (see Contract item 7, Docs/Contract.md); empty after a clean open.
    public var recoveryIssues: [StorageError] { engine.sync { $0.issuesFoundAtOpen } }

    /// Metadata of every stored value, least recently used first (reads served by a memory layer in
    /// front count as use), without reading any value.
    public var entryInfos: [DiskEntryInfo] {
        let now = now()
        return engine.sync { store in
            store.applyMemoryHits(now: now)
            return store.withIndex { $0.entriesOldestFirst }.filter { !ReservedKeys.contains($0.0) }.map { key, record in
                DiskEntryInfo(key: key, size: record.size,
                              expiry: Expiry(storedDate: StoredTime.date(record.expiry)),
                              lastAccess: StoredTime.date(record.lastAccess),
                              filePath: store.filePath(of: record))
            }
        }
    }

    /// Reads the bytes on the engine's queue, then decodes them on the calling thread: the queue's
    /// part is not generic (`DiskEngine.read`), and a slow decoder holds up no other call.
    public func entry(forKey key: String) throws -> Entry<T> {
        try engine.checkOutsideUserCode()
        let now = now()
        let (data, expiry, path) = try engine.read(key, now: now)
        return try Entry(object: decode(data, key: key), expiry: Expiry(storedDate: StoredTime.date(expiry)),
                         filePath: path, isExpired: StoredTime.seconds(now) >= expiry)
    }

    /// As ``entry(forKey:)``, without building an `Entry<T>` (whose generic metadata an unspecialised
    /// caller would look up on every read).
    public func object(forKey key: String) throws -> T {
        try engine.checkOutsideUserCode()
        let now = now()
        let (data, expiry, _) = try engine.read(key, now: now)
        let object = try decode(data, key: key)
        if StoredTime.seconds(now) >= expiry, expiry != StoredTime.never {
            throw StorageError.expired(StoredTime.date(expiry), key: key)
        }
        return object
    }

    /// Answered from the index under its own lock, without waiting for the queue; still
    /// linearizable with every other operation (see `DiskEngine.record(forKey:)`).
    public func existsObject(forKey key: String) -> Bool {
        let now = StoredTime.seconds(now())
        return engine.record(forKey: key).map { now < $0.expiry } ?? false
    }

    /// Answered from the index like ``existsObject(forKey:)``.
    public func isExpiredObject(forKey key: String) throws -> Bool {
        try engine.checkOutsideUserCode()
        let now = StoredTime.seconds(now())
        guard let record = engine.record(forKey: key) else { throw StorageError.notFound(key: key) }
        return now >= record.expiry
    }

    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        let now = now()
        let (data, expiryDate) = try prepareWrite(object, forKey: key, expiry: expiry, now: now)
        try engine.write(key, data, expiry: expiryDate, now: now, config: config.writeSettings)
    }

    public func removeObject(forKey key: String) throws {
        try checkWritable()
        try ReservedKeys.check(key)
        try engine.remove(key, durable: config.durable)
    }

    public func removeAll() throws {
        try checkWritable()
        try engine.sync { try $0.writer.removeAll() }
    }

    /// Removes every expired value; observers of the folder hear `.removeExpired` even when nothing
    /// had expired (as hyperoslo/Cache's do).
    public func removeExpiredObjects() throws {
        try checkWritable()
        let now = now()
        try engine.sync { store in
            if try store.writer.removeExpired(now: now).isEmpty { engine.observers.publish(.remove(keys: [], reason: .expired)) }
        }
    }

    /// Removes expired values, then least recently used ones, until at most `size` bytes remain.
    /// - Throws: ``StorageError/invalidLimit(name:value:)`` for a negative `size` (nothing is removed).
    public func trim(toSize size: Int) throws {
        try checkWritable()
        guard size >= 0 else { throw StorageError.invalidLimit(name: "size", value: size) }
        let now = now()
        try engine.sync { try $0.writer.trim(toSize: size, now: now) }
    }

    /// A view of the same store (same folder, queue and index) whose values are `U`.
    public func transform<U: Sendable>(transformer: Transformer<U>) -> DiskStorage<U> {
        DiskStorage<U>(config: config, transformer: transformer, engine: engine, now: now)
    }

    /// Reads and decodes `key`'s value on the engine's queue.
    ///
    /// Bytes that this transformer cannot decode are intact (damaged ones fail in ``DiskStore/read(_:now:)``
    /// as ``StorageError/corrupted(_:)``): the entry is kept for another view or the app's migration
    /// code, and the error is ``StorageError/decodingFailed(_:key:)`` (or the transformer's own ``StorageError``).
    func readEntry(_ key: String, from store: DiskStore) throws -> (entry: Entry<T>, size: Int) {
        let now = now()
        let (data, record, path) = try store.read(key, now: now)
        let object = try decode(data, key: key)
        let entry = Entry(object: object, expiry: Expiry(storedDate: StoredTime.date(record.expiry)),
                          filePath: path, isExpired: StoredTime.seconds(now) >= record.expiry)
        return (entry, data.count)
    }
}

extension DiskStorage {
    /// Bytes that this transformer cannot decode are intact (damaged ones fail in ``DiskStore/read(_:now:)``
    /// as ``StorageError/corrupted(_:)``): the entry is kept for another view or the app's migration
    /// code, and the error is ``StorageError/decodingFailed(_:key:)`` naming `key` (or the transformer's own
    /// ``StorageError``).
    func decode(_ data: Data, key: String) throws -> T {
        try transformer.decode(data, key: key)
    }
}

/// What the disk index knows of one stored value.
public struct DiskEntryInfo: Sendable, Hashable {
    /// The key.
    public let key: String
    /// The value's size in bytes.
    public let size: Int
    /// When the value expires.
    public let expiry: Expiry
    /// When the value was last written or read.
    public let lastAccess: Date
    /// The file holding the value's bytes; nil for a value packed into a segment file.
    public let filePath: String?

    /// Whether the value is expired at `date` (from its expiry date on).
    public func isExpired(at date: Date) -> Bool {
        if case .date(let expiry) = expiry { return date >= expiry }
        return false
    }
}
