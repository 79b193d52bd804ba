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
    public init(expiry: Expiry = .never, countLimit: Int = 0, totalCostLimit: Int = 0) {
        self.expiry = expiry
        self.countLimit = max(0, countLimit)
        self.totalCostLimit = max(0, totalCostLimit)
    }
}
