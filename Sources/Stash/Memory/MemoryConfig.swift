import StashEngine
/// Settings of the memory layer.
public struct MemoryConfig: Sendable {
    /// The default expiry of values written to a ``MemoryStorage`` on its own.
    ///
    /// Inside a ``Storage`` (memory in front of disk) a value's expiry comes from the call or from
    /// ``DiskConfig/expiry``; there this setting bounds how long a copy is kept in memory before it
    /// is read again from disk.
    public var expiry: Expiry
    /// The most entries kept; 0 means no limit.
    public var countLimit: Int
    /// The most total cost kept; 0 means no limit. Inside a ``Storage`` an entry's cost is its
    /// encoded size in bytes.
    public var totalCostLimit: Int

    /// Creates a memory configuration.
    /// - Parameters:
    ///   - expiry: The default expiry (see ``expiry``).
    ///   - countLimit: The most entries kept, least recently used evicted first; 0 = unlimited.
    ///   - totalCostLimit: The most total cost kept, least recently used evicted first; 0 = unlimited.
    ///
    /// Negative limits and an unusable expiry are kept as given and refused with a ``StorageError``
    /// by `Storage.init` and by every write (a configuration is a plain value, so it cannot throw here).
    public init(expiry: Expiry = .never, countLimit: Int = 0, totalCostLimit: Int = 0) {
        self.expiry = expiry
        self.countLimit = countLimit
        self.totalCostLimit = totalCostLimit
    }

    /// Refuses settings that cannot be honoured.
    /// - Throws: ``StorageError/invalidLimit(name:value:)`` for a negative limit,
    ///   ``StorageError/invalidExpiry(_:)`` for an unusable ``expiry``.
    func validate() throws {
        guard countLimit >= 0 else { throw StorageError.invalidLimit(name: "countLimit", value: countLimit) }
        guard totalCostLimit >= 0 else { throw StorageError.invalidLimit(name: "totalCostLimit", value: totalCostLimit) }
        guard expiry.isValid else { throw StorageError.invalidExpiry(expiry) }
    }
}
