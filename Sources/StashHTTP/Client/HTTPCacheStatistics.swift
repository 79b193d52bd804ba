/// What an ``HTTPCache`` has done since it was created (or since ``HTTPCache/resetStatistics()``).
public struct HTTPCacheStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Requests answered by a fresh stored response, without the network.
    public var hits = 0
    /// Requests for which nothing was stored, so the network was asked.
    public var misses = 0
    /// Conditional requests the server answered 304 Not Modified.
    public var revalidations = 0
    /// Responses served stale: offline, after a 5xx, under `stale-while-revalidate`, or accepted by the request.
    public var staleServed = 0
    /// Storage failures absorbed (see ``HTTPCacheConfiguration/storageErrorHandler``).
    public var storageFailures = 0

    /// Creates statistics, all zero by default.
    /// - Parameters:
    ///   - hits: Fresh stored responses served.
    ///   - misses: Requests with nothing stored.
    ///   - revalidations: 304 answers.
    ///   - staleServed: Stale responses served.
    ///   - storageFailures: Storage failures absorbed.
    public init(hits: Int = 0, misses: Int = 0, revalidations: Int = 0, staleServed: Int = 0, storageFailures: Int = 0) {
        self.hits = hits
        self.misses = misses
        self.revalidations = revalidations
        self.staleServed = staleServed
        self.storageFailures = storageFailures
    }

    /// The share of requests served by a fresh stored response or a 304, among those that
    /// involved the cache; 0 when there were none.
    public var hitRatio: Double {
        let total = hits + misses + revalidations + staleServed
        return total == 0 ? 0 : Double(hits + revalidations) / Double(total)
    }

    /// The counters on one line, for logs.
    public var description: String {
        "hits: \(hits), misses: \(misses), revalidations: \(revalidations), stale served: \(staleServed), storage failures: \(storageFailures)"
    }
}
