public import Foundation
import StashEngine

/// A typed key-value store: a memory cache in front of a disk store, with per-entry expiry.
///
/// ```swift
/// let storage = try Storage<User>(
///     diskConfig: DiskConfig(name: "Users", expiry: .seconds(86_400), maxSize: 50_000_000),
///     memoryConfig: MemoryConfig(countLimit: 200),
///     transformer: TransformerFactory.forCodable(ofType: User.self)
/// )
/// try storage.setObject(user, forKey: "me")
/// let me = try storage.object(forKey: "me")          // throws StorageError.expired when stale
/// let stale = try storage.entry(forKey: "me")         // also returns expired values, flagged
/// let later = try await storage.async.object(forKey: "me")
/// ```
/// The synchronous API is the storage itself; ``async`` is the asynchronous one. Both go through
/// one serial queue per store, shared with every ``transform(transformer:)`` view and with every
/// other storage opened on the same folder in this process.
public final class Storage<T: Sendable>: StorageAware, Sendable {
    let hybridStorage: HybridStorage<T>
    let syncStorage: SyncStorage<T>
    /// The asynchronous API: completion handlers and `async` functions.
    public let async: AsyncStorage<T>
    /// The memory folder of an ``inMemory(name:memoryConfig:transformer:now:)`` store, removed once no
    /// storage of it is left; nil for a store whose folder is the app's.
    let ownedFolder: OwnedFolder?

    /// Opens (creating if needed) a store with a memory layer in front of a disk layer.
    /// - Parameters:
    ///   - diskConfig: Where the store lives, its size limit and the default expiry.
    ///   - memoryConfig: The memory layer's limits; an entry's cost is its encoded size in bytes.
    ///   - transformer: Converts values to the stored bytes and back.
    ///   - now: The clock that expiry is measured against (inject one in tests).
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when the folder cannot be created or
    ///   read, ``StorageError/inUse(directory:)`` when another process has it open,
    ///   ``StorageError/invalidName(_:)`` when ``DiskConfig/name`` would leave ``DiskConfig/directory``,
    ///   ``StorageError/invalidLimit(name:value:)`` or ``StorageError/invalidExpiry(_:)`` for unusable
    ///   settings (checked before anything is opened), and
    ///   ``StorageError/configurationConflict(directory:setting:inForce:requested:)`` when the folder is
    ///   already open in this process with another ``DiskConfig/maxSize`` or ``DiskConfig/durable``.
    public convenience init(
        diskConfig: DiskConfig,
        memoryConfig: MemoryConfig = MemoryConfig(),
        transformer: Transformer<T>,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try memoryConfig.validate()
        let disk = try DiskStorage(config: diskConfig, transformer: transformer, now: now)
        let memory = MemoryStorage<T>(config: memoryConfig, now: now)
        self.init(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk))
    }

    /// Wraps an existing hybrid storage.
    public convenience init(hybridStorage: HybridStorage<T>) {
        self.init(hybridStorage: hybridStorage, ownedFolder: nil)
    }

    init(hybridStorage: HybridStorage<T>, ownedFolder: OwnedFolder?) {
        self.hybridStorage = hybridStorage
        self.ownedFolder = ownedFolder
        syncStorage = SyncStorage(storage: hybridStorage)
        async = AsyncStorage(storage: hybridStorage)
    }

    /// Every stored key (expired ones included), as listed by the disk index.
    public var allKeys: [String] { syncStorage.allKeys }

    /// The bytes of all values on disk.
    public var totalSize: Int { hybridStorage.totalSize }

    /// The store's folder; for an ``inMemory(name:memoryConfig:transformer:now:)`` store, a path under
    /// `/dev/null/stash-in-memory/` that says so and names nothing on disk.
    public var path: String { hybridStorage.diskStorage.path }

    /// Metadata of every stored value (key, size, expiry, last access, file), least recently used
    /// first, without reading any value: for listing what an offline store holds and how old it is.
    /// - Complexity: O(n) in the number of stored values.
    public var entryInfos: [DiskEntryInfo] { hybridStorage.entryInfos }

    /// Removes expired values, then least recently used ones, until at most `size` bytes of values
    /// remain on disk (say, when the system reports low storage). ``DiskConfig/maxSize`` already
    /// holds after every write; this shrinks the store further on demand.
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when a removal cannot be recorded.
    public func trim(toSize size: Int) throws {
        try hybridStorage.trim(toSize: size)
    }

    /// What opening the store found damaged and dropped; empty after a clean open.
    public var recoveryIssues: [StorageError] { hybridStorage.diskStorage.recoveryIssues }

    public func entry(forKey key: String) throws -> Entry<T> {
        try syncStorage.entry(forKey: key)
    }

    public func object(forKey key: String) throws -> T {
        try syncStorage.object(forKey: key)
    }

    public func existsObject(forKey key: String) throws -> Bool {
        try syncStorage.existsObject(forKey: key)
    }

    public func isExpiredObject(forKey key: String) throws -> Bool {
        try syncStorage.isExpiredObject(forKey: key)
    }

    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        try syncStorage.setObject(object, forKey: key, expiry: expiry)
    }

    public func removeObject(forKey key: String) throws {
        try syncStorage.removeObject(forKey: key)
    }

    public func removeAll() throws {
        try syncStorage.removeAll()
    }

    public func removeExpiredObjects() throws {
        try syncStorage.removeExpiredObjects()
    }
}
