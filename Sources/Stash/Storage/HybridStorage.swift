import Foundation
import StashEngine

/// Memory in front of disk: reads try memory first, then disk (copying a disk hit into memory);
/// writes go to disk, then memory.
///
/// Every mutation and every disk read runs on the store's serial queue; a memory hit is served
/// under the memory layer's lock alone. The memory layer never holds a key the disk has lost
/// (removal, eviction and expiry clean-up drop it from memory too), so both layers agree.
public final class HybridStorage<T: Sendable>: StorageAware, Sendable {
    /// The memory layer (shared with every view of this storage).
    public let memoryStorage: MemoryStorage<T>
    /// The disk layer.
    public let diskStorage: DiskStorage<T>
    /// `ValueBox<T>`, looked up once: a memory hit compares it instead of casting.
    private let boxType = ObjectIdentifier(ValueBox<T>.self)
    /// The memory layer's cache and the clock, held directly: a memory hit then loads them from
    /// `self` instead of retaining them through the layers.
    let cache: MemoryCache
    private let clock: @Sendable () -> Date
    /// The disk layer's engine, held directly too: reached through `diskStorage` it was retained and
    /// released on every memory hit, and its reference count (kept aside, as it is weakly referenced)
    /// is a cache line that hits on every thread then wrote.
    let engine: DiskEngine

    /// Combines a memory and a disk layer.
    public init(memoryStorage: MemoryStorage<T>, diskStorage: DiskStorage<T>) {
        self.memoryStorage = memoryStorage
        self.diskStorage = diskStorage
        cache = memoryStorage.cache
        clock = diskStorage.now
        engine = diskStorage.engine
        let (layers, cache) = (engine.layers, memoryStorage.cache)
        engine.sync { _ in layers.attach(cache) }
    }

    deinit {
        // Memory hits count as use on disk; record this storage's last ones before its memory goes.
        let (cache, now) = (memoryStorage.cache, diskStorage.now())
        engine.sync { $0.recordHits(cache.takeRecentHits(), now: now) }
    }

    var now: Date { clock() }

    public var allKeys: [String] { diskStorage.allKeys }

    /// The bytes of all values on disk.
    public var totalSize: Int { diskStorage.totalSize }

    public func entry(forKey key: String) throws -> Entry<T> {
        try engine.checkOutsideUserCode() // inside an update or transaction body: an error, not a write beside it
        engine.prepareReadWithoutQueue() // memory drops what another process changed; earlier async writes land
        if let entry = memoryEntry(forKey: key) { return entry }
        return try entryFromQueue(forKey: key)
    }

    /// The entry as the queue sees it: memory once more (a write may have landed meanwhile), then disk.
    private func entryFromQueue(forKey key: String) throws -> Entry<T> {
        try engine.sync { store in
            if let entry = memoryEntry(forKey: key) { return entry }
            let (entry, size) = try diskStorage.readEntry(key, from: store)
            remember(entry.object, forKey: key, cost: size, expiry: entry.expiry.resolved(from: now), filePath: entry.filePath)
            return entry
        }
    }

    public func object(forKey key: String) throws -> T {
        try engine.checkOutsideUserCode()
        // The fast path of a memory hit: the value alone, under the memory layer's lock.
        engine.prepareReadWithoutQueue() // memory drops what another process changed; earlier async writes land
        let now = now
        if let hit = cache.hit(forKey: key, now: now), ObjectIdentifier(type(of: hit.box)) == boxType {
            if now >= hit.expiry, hit.expiry < .distantFuture { throw StorageError.expired(hit.expiry, key: key) }
            return unsafeDowncast(hit.box, to: ValueBox<T>.self).value
        }
        return try objectFromEntry(forKey: key)
    }

    /// The slow path of ``object(forKey:)``, out of line, as ``entryFromQueue(forKey:)`` without an
    /// `Entry<T>`: on the queue, memory once more (a write may have landed meanwhile), then disk, the
    /// value decoded and remembered there. It leaves the queue in its memory box, so the hop's result
    /// is not generic: this code is not specialised, and an `Entry<T>` (or a `T?`) crossing the hop
    /// cost ~2,600 instructions of generic metadata lookups per read (Docs/Architecture.md, "The hot path").
    ///
    /// A store nobody else changes is read off the queue instead (``objectOffQueue(forKey:now:)``).
    @inline(never)
    private func objectFromEntry(forKey key: String) throws -> T {
        let now = now
        if let object = try objectOffQueue(forKey: key, now: now) { return object }
        let (box, expiry) = try engine.sync(readsWithoutLock: true) { store throws -> (AnyValueBox, Date) in
            if let item = cache.item(forKey: key, now: now) {
                if ObjectIdentifier(type(of: item.object)) == boxType { return (item.object, item.expiry) }
                // Another view's copy is a miss, unless its value is a `T` all the same.
                if let object = item.object.value(as: T.self) { return (ValueBox(object), item.expiry) }
            }
            let (data, record, path) = try store.read(key, now: now)
            let box = try ValueBox(diskStorage.decode(data, key: key))
            let expiry = StoredTime.date(record.expiry)
            remember(box, forKey: key, cost: data.count, expiry: expiry, filePath: path)
            return (box, expiry)
        }
        if now >= expiry, expiry != .distantFuture { throw StorageError.expired(expiry, key: key) }
        return unsafeDowncast(box, to: ValueBox<T>.self).value
    }

    /// A memory miss read from disk without the queue, decoded on the calling thread, so that readers
    /// on several threads go on together; nil when the read must be made on the queue
    /// (``DiskEngine/readOffQueue(_:now:)``). The value goes into memory only if the index still has
    /// the record it came from (``DiskEngine/ifCurrent(_:_:generation:_:)``): a write that replaced it meanwhile
    /// has dropped the key from memory, and its value is not put back.
    private func objectOffQueue(forKey key: String, now: Date) throws -> T? {
        guard let (data, record, path, generation) = try engine.readOffQueue(key, now: now) else { return nil }
        let object = try diskStorage.decode(data, key: key)
        let expiry = StoredTime.date(record.expiry)
        let item = memoryItem(ValueBox(object), cost: data.count, expiry: expiry, filePath: path)
        engine.ifCurrent(key, record, generation: generation) { cache.set(item, forKey: key) }
        if now >= expiry, expiry != .distantFuture { throw StorageError.expired(expiry, key: key) }
        return object
    }

    public func existsObject(forKey key: String) throws -> Bool {
        try engine.checkOutsideUserCode()
        engine.prepareReadWithoutQueue()
        if let item = cache.item(forKey: key, now: now) { return now < item.expiry }
        return diskStorage.existsObject(forKey: key)
    }

    public func isExpiredObject(forKey key: String) throws -> Bool {
        try engine.checkOutsideUserCode()
        engine.prepareReadWithoutQueue()
        if let item = cache.item(forKey: key, now: now) { return now >= item.expiry }
        return try diskStorage.isExpiredObject(forKey: key)
    }

    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        let now = now
        // Last before encoding: the memory copy's limits and expiry (a plain value: checked here).
        let (data, expiryDate) = try diskStorage.prepareWrite(object, forKey: key, expiry: expiry, now: now,
                                                              lastCheck: cache.config.validate)
        // The memory copy replaces the old one as the index changes, in one hold of its lock (one
        // exclusive access of the memory layer, not a drop and then a set); a trim that evicts the
        // value right after its write drops it again, so memory never holds what disk lost.
        let item = memoryItem(ValueBox(object), cost: data.count, expiry: expiryDate, filePath: nil)
        try engine.write(key, data, expiry: expiryDate, now: now, config: diskStorage.config.writeSettings, memoryLayer: cache,
                         putInMemory: { path in
                             var item = item
                             item.filePath = path
                             cache.set(item, forKey: key)
                         })
    }

    public func removeObject(forKey key: String) throws {
        try diskStorage.removeObject(forKey: key)
    }

    public func removeAll() throws {
        try diskStorage.removeAll()
    }

    /// Removes every expired value; observers hear `.removeExpired` even when nothing had expired
    /// (as hyperoslo/Cache's do).
    public func removeExpiredObjects() throws {
        try diskStorage.removeExpiredObjects()
    }

    /// Metadata of every stored value, least recently used first (memory hits count as use).
    public var entryInfos: [DiskEntryInfo] { diskStorage.entryInfos }

    /// Removes expired values, then least recently used ones, until at most `size` bytes remain on
    /// disk; memory drops its copies of what was removed.
    public func trim(toSize size: Int) throws {
        try diskStorage.trim(toSize: size)
    }

    /// A view of the same store whose values are `U`: same queue, memory layer, folder and observers.
    public func transform<U: Sendable>(transformer: Transformer<U>) -> HybridStorage<U> {
        HybridStorage<U>(memoryStorage: memoryStorage.transform(), diskStorage: diskStorage.transform(transformer: transformer))
    }

    /// The value of a memory hit of type `T`, without the queue; nil on a miss.
    /// - Throws: ``StorageError/expired(_:key:)`` for an expired copy, as ``object(forKey:)`` does.
    func memoryObject(forKey key: String) throws -> T? {
        engine.prepareReadWithoutQueue()
        let now = now
        guard let hit = cache.hit(forKey: key, now: now), ObjectIdentifier(type(of: hit.box)) == boxType else { return nil }
        if now >= hit.expiry, hit.expiry < .distantFuture { throw StorageError.expired(hit.expiry, key: key) }
        return unsafeDowncast(hit.box, to: ValueBox<T>.self).value
    }

    /// The memory copy of `key` as an entry, if memory has one of type `T`.
    func memoryEntry(forKey key: String) -> Entry<T>? {
        engine.prepareReadWithoutQueue()
        let now = now
        // A copy of another view's type is a miss: the disk bytes decode as `T`.
        guard let item = cache.item(forKey: key, now: now), let object = item.object.value(as: T.self) else { return nil }
        return Entry(object: object, expiry: Expiry(storedDate: item.expiry), filePath: item.filePath, isExpired: now >= item.expiry)
    }

    func remember(_ object: T, forKey key: String, cost: Int, expiry: Date, filePath: String?) {
        remember(ValueBox(object), forKey: key, cost: cost, expiry: expiry, filePath: filePath)
    }

    func remember(_ box: AnyValueBox, forKey key: String, cost: Int, expiry: Date, filePath: String?) {
        cache.set(memoryItem(box, cost: cost, expiry: expiry, filePath: filePath), forKey: key)
    }

    /// The memory layer's item for a value (its own expiry, ``MemoryConfig/expiry``, counted from now).
    private func memoryItem(_ box: AnyValueBox, cost: Int, expiry: Date, filePath: String?) -> MemoryCache.Item {
        MemoryCache.Item(object: box, cost: cost, expiry: expiry, dropAfter: cache.config.expiry.resolved(from: now), filePath: filePath)
    }
}
