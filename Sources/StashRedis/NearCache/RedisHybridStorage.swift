public import Foundation
public import Stash

/// A memory layer in front of Redis (a near cache), kept coherent with `CLIENT TRACKING`.
///
/// ```swift
/// let pages = try RedisHybridStorage<Page>(
///     configuration: RedisConfiguration(url: "redis://10.0.0.5:6379"),
///     namespace: "pages",
///     memoryConfig: MemoryConfig(countLimit: 10_000),
///     transformer: TransformerFactory.forCodable(ofType: Page.self)
/// )
/// let page = try pages.object(forKey: "/home")   // memory hit, or Redis (then cached)
/// ```
/// Reads try memory, then Redis; a value read from Redis is cached with its Redis expiry. When any
/// process changes a key, Redis pushes an invalidation and this process drops its memory copy; a
/// write through this store drops the local copy before it returns. If the invalidation connection
/// is lost, memory is flushed and bypassed until it is back, so a lost invalidation never yields a
/// stale read. Docs/Redis.md gives the measured window between another process's write returning
/// and this memory dropping the old copy.
@available(watchOS, unavailable, message: "watchOS restricts BSD sockets to audio streaming apps (TN3135): Redis cannot be reached from a watch app")
public final class RedisHybridStorage<T: Sendable>: RedisStore, Sendable {
    /// The memory layer (shared by the store's views).
    public let memoryStorage: MemoryStorage<T>
    /// The Redis layer.
    public let redisStorage: RedisStorage<T>
    let coherence: Coherence
    /// The memory layer's cache and the clock, held directly: a memory hit loads them from `self`.
    private let cache: MemoryCache
    private let clock: @Sendable () -> Date
    /// `ValueBox<T>`, looked up once: a memory hit compares it instead of casting.
    private let boxType = ObjectIdentifier(ValueBox<T>.self)

    /// Opens the namespace on Redis with a memory layer in front of it.
    /// - Parameters:
    ///   - configuration: The Redis server and its timeouts.
    ///   - namespace: The key prefix; `removeAll()` and `allKeys` touch only keys under it.
    ///   - expiry: The default expiry, resolved to an absolute date when a value is written.
    ///   - memoryConfig: The memory layer's limits; an entry's cost is its encoded size in bytes.
    ///     Its `expiry` is not used: a memory copy lives as long as the Redis value (or its invalidation).
    ///   - heartbeat: How often the invalidation connection reads the database's generation (noticing a
    ///     `SWAPDB`, and checking that the connection is alive: a dead one is noticed within this plus
    ///     the command timeout).
    ///   - transformer: Converts values to the stored bytes and back.
    ///   - now: The clock `.seconds(n)` counts from; Redis's own clock decides when a value goes.
    /// - Throws: `StorageError.invalidName(_:)` for an empty namespace.
    public convenience init(configuration: RedisConfiguration, namespace: String, expiry: Expiry = .never,
                            memoryConfig: MemoryConfig = MemoryConfig(), transformer: Transformer<T>,
                            heartbeat: TimeInterval = 1, now: @escaping @Sendable () -> Date = { Date() }) throws {
        let redis = try RedisStorage(configuration: configuration, namespace: namespace, expiry: expiry,
                                     transformer: transformer, now: now)
        let memory = MemoryStorage<T>(config: memoryConfig, now: now)
        let listener = InvalidationListener(
            pool: redis.client.pool, prefix: redis.keyPrefix, heartbeat: heartbeat,
            drop: { memory.removeObject(forKey: $0) }, flush: { memory.removeAll() })
        self.init(memoryStorage: memory, redisStorage: redis, coherence: Coherence(listener))
    }

    init(memoryStorage: MemoryStorage<T>, redisStorage: RedisStorage<T>, coherence: Coherence) {
        self.memoryStorage = memoryStorage
        self.redisStorage = redisStorage
        self.coherence = coherence
        cache = memoryStorage.cache
        clock = redisStorage.now
    }

    /// The asynchronous API: completion handlers and `async` functions, run concurrently on the pool
    /// (calls on one key keep their submission order); a memory hit is answered at once.
    public var async: RedisAsyncStorage<T> { RedisAsyncStorage(self, scheduler: redisStorage.observers.scheduler) }

    /// A view of the same store whose values are `U`: same memory layer, coherence, client and observers.
    public func transform<U: Sendable>(transformer: Transformer<U>) -> RedisHybridStorage<U> {
        RedisHybridStorage<U>(memoryStorage: memoryStorage.transform(), redisStorage: redisStorage.transform(transformer: transformer),
                              coherence: coherence)
    }

    /// Whether the memory layer is in use now (tracking is on); when false every read goes to Redis.
    public var isMemoryCoherent: Bool { listener.isTracking }

    /// Why the memory layer is off, when it is: the last failure of the invalidation connection
    /// (``RedisError/authenticationFailed(user:server:reply:)`` for a wrong password, `connectFailed`
    /// while Redis is down…); nil while tracking is on. It names the problem once, where a log would
    /// repeat it per attempt; attempts meanwhile back off up to ``RedisConfiguration/maximumBackoff``.
    public var coherenceError: RedisError? { listener.problem }

    private var listener: InvalidationListener { coherence.listener }

    // MARK: StorageAware

    public var allKeys: [String] { redisStorage.allKeys }

    public func keys() throws -> [String] { try redisStorage.keys() }

    func memoryEntry(forKey key: String) -> Entry<T>? {
        guard let entry = try? memoryStorage.entry(forKey: key), !entry.isExpired else { return nil }
        return entry
    }

    public func entry(forKey key: String) throws -> Entry<T> {
        // No check of the tracking state first: memory holds nothing while tracking is off (values are
        // admitted only while it is on, and it is flushed when it goes off), and a check would not
        // narrow the window anyway: tracking may break right after it.
        if let entry = try? memoryStorage.entry(forKey: key), !entry.isExpired { return entry }
        return try entryFromRedis(forKey: key)
    }

    public func object(forKey key: String) throws -> T {
        // The fast path of a memory hit, as the disk Storage's: one lock and a class comparison
        // (Stash's memory cache, shared as a `package` helper), no `Entry` built. Memory needs no
        // normalized key: Swift's String keys already compare canonically; only Redis keys are NFC.
        let now = clock()
        if let hit = cache.hit(forKey: key, now: now), now < hit.expiry, ObjectIdentifier(type(of: hit.box)) == boxType {
            return unsafeDowncast(hit.box, to: ValueBox<T>.self).value
        }
        return try entryFromRedis(forKey: key).object // Redis never returns an expired value
    }

    /// Reads Redis and caches the value if no invalidation overtook the read.
    private func entryFromRedis(forKey key: String) throws -> Entry<T> {
        let ticket = listener.beginRead()
        defer { listener.endRead() }
        let (entry, size, generation) = try guarded {
            try redisStorage.fetch(forKey: key, alsoRead: listener.readsGeneration ? InvalidationListener.generationKey : nil)
        }
        if let ticket {
            listener.admit(key, ticket: ticket, generation: generation) {
                try? memoryStorage.setObject(entry.object, forKey: key, expiry: entry.expiry, cost: size)
            }
        }
        return entry
    }

    /// Writes to Redis, then drops the local copy (the next read caches the new value): a read in
    /// this process after the write returns never sees the old value.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        defer { listener.invalidate([key]) }
        try guarded { try redisStorage.setObject(object, forKey: key, expiry: expiry) }
    }

    public func removeObject(forKey key: String) throws {
        defer { listener.invalidate([key]) }
        try guarded { try redisStorage.removeObject(forKey: key) }
    }

    public func removeAll() throws {
        defer { listener.invalidate(nil) }
        try guarded { try redisStorage.removeAll() }
    }

    public func removeExpiredObjects() throws {
        memoryStorage.removeExpiredObjects()
        try redisStorage.removeExpiredObjects()
    }

    /// Runs a Redis call; when it fails for want of a working connection, memory is flushed and
    /// tracking restarted before the error is thrown (no memory copy outlives an outage).
    private func guarded<Result>(_ body: () throws -> Result) throws -> Result {
        do {
            return try body()
        } catch StorageError.io(let operation, let path, let cause as RedisError) where cause.breaksConnection {
            listener.restart()
            throw StorageError.io(operation: operation, path: path, underlying: cause)
        }
    }
}

/// Owns the invalidation listener of a near cache and its views; stops it when the last one goes.
@available(watchOS, unavailable)
final class Coherence: Sendable {
    let listener: InvalidationListener

    init(_ listener: InvalidationListener) { self.listener = listener }

    deinit { listener.stop() }
}
