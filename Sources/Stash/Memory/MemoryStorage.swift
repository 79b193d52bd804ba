public import Foundation
import StashEngine

/// An in-process cache: least recently used entries are evicted past ``MemoryConfig/countLimit``
/// or ``MemoryConfig/totalCostLimit``, and each entry has its own expiry.
///
/// Thread-safe on its own (reads on several threads go on together; a write stops them briefly); inside
/// a ``Storage`` it is the layer in front of the disk.
///
/// ```swift
/// let memory = MemoryStorage<User>(config: MemoryConfig(countLimit: 100))
/// try memory.setObject(user, forKey: "me")
/// ```
public final class MemoryStorage<T: Sendable>: StorageAware, Sendable {
    package let cache: MemoryCache
    let now: @Sendable () -> Date
    private let cost: (@Sendable (T) -> Int)?

    /// Creates an empty memory storage.
    /// - Parameters:
    ///   - config: Limits and default expiry.
    ///   - cost: The cost of a value, for ``MemoryConfig/totalCostLimit``; nil counts every value as 0
    ///     unless ``setObject(_:forKey:expiry:cost:)`` names one.
    ///   - now: The clock that expiry is measured against.
    public convenience init(
        config: MemoryConfig = MemoryConfig(),
        cost: (@Sendable (T) -> Int)? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(cache: MemoryCache(config: config), cost: cost, now: now)
    }

    init(cache: MemoryCache, cost: (@Sendable (T) -> Int)?, now: @escaping @Sendable () -> Date) {
        self.cache = cache
        self.cost = cost
        self.now = now
    }

    /// The configuration in force.
    public var config: MemoryConfig { cache.config }

    public var allKeys: [String] { cache.keys }

    /// The sum of the stored entries' costs.
    public var totalCost: Int { cache.totalCost }

    /// The number of stored entries.
    public var count: Int { cache.count }

    public func entry(forKey key: String) throws -> Entry<T> {
        guard let item = cache.item(forKey: key, now: now()) else { throw StorageError.notFound(key: key) }
        guard let object = item.object.value(as: T.self) else { throw StorageError.typeNotMatch }
        return Entry(object: object, expiry: Expiry(storedDate: item.expiry), filePath: item.filePath,
                     isExpired: now() >= item.expiry)
    }

    /// Stores `object` for `key`, replacing any value.
    /// - Throws: ``StorageError/invalidExpiry(_:)`` or ``StorageError/invalidLimit(name:value:)`` for an
    ///   unusable expiry or configuration; nothing is stored then.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        try setObject(object, forKey: key, expiry: expiry, cost: cost?(object) ?? 0)
    }

    /// Stores `object` with an explicit cost for ``MemoryConfig/totalCostLimit``.
    /// - Throws: As ``setObject(_:forKey:expiry:)``.
    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil, cost: Int) throws {
        try config.validate()
        let expiryDate = try (expiry ?? config.expiry).checkedDate(from: now())
        cache.set(MemoryCache.Item(object: ValueBox(object), cost: max(0, cost), expiry: expiryDate,
                                   dropAfter: .distantFuture, filePath: nil), forKey: key)
    }

    public func removeObject(forKey key: String) {
        cache.remove(key)
    }

    public func removeAll() {
        cache.removeAll()
    }

    public func removeExpiredObjects() {
        cache.removeExpired(now: now())
    }

    /// A view of the same entries typed as `U`; reading an entry stored as another type throws
    /// ``StorageError/typeNotMatch``.
    public func transform<U: Sendable>(cost: (@Sendable (U) -> Int)? = nil) -> MemoryStorage<U> {
        MemoryStorage<U>(cache: cache, cost: cost, now: now)
    }
}
