public import Foundation

/// How one request uses the cache.
public enum HTTPCachePolicy: Sendable, Hashable {
    /// RFC 9111: a fresh stored response is used, a stale one is revalidated, a failure falls back
    /// to the stored response. The request's own `Cache-Control` (`no-cache`, `no-store`, `max-age`,
    /// `max-stale`, `min-fresh`, `only-if-cached`) is honoured.
    case useProtocolRules
    /// Any stored response, fresh or stale, without asking the network; the network only when
    /// nothing is stored.
    case returnCacheElseLoad
    /// Only a stored response, fresh or stale; throws ``HTTPCacheError/notCached(_:)`` when none is
    /// stored (RFC 9111's `only-if-cached`).
    case cacheOnly
    /// Ignores stored responses and loads from the network; the new response is still stored.
    case reload
    /// Always asks the server, conditionally when a validator is stored; a fresh `immutable`
    /// response is used without asking (RFC 8246).
    case revalidate
}

/// Per-request choices: the policy, the namespace, and overrides of the server's freshness.
public struct HTTPRequestOptions: Sendable, Hashable {
    /// How the request uses the cache. Default: ``HTTPCachePolicy/useProtocolRules``.
    public var policy: HTTPCachePolicy
    /// The namespace; nil uses ``HTTPCacheConfiguration/namespace``.
    public var namespace: String?
    /// The partition of the namespace the request is answered from and stored in: a request is only
    /// ever answered with responses stored under the same partition, so giving each user (or each
    /// credential) its own keeps one user's responses from another. An unsafe request still removes
    /// what every partition stores for its URL. Maintenance selects by namespace and URL across all
    /// partitions. Empty (the default): the partition every request without one shares.
    /// `URLSessionConfiguration.cached(by:partition:)` sets it per request.
    public var partition: String
    /// How stale a stored response may be and still be used without asking the network (like a
    /// request's `max-stale`); nil accepts no staleness. Never overrides `must-revalidate` or `no-cache`.
    public var maxStale: TimeInterval?
    /// A freshness lifetime that replaces the server's: the response is stored even when the server
    /// says `no-store` or gives no freshness, and is fresh for this long (AlamofireURLCache's
    /// `ignoreServer` with `maxAge`). It is kept with the stored response. nil: the server decides.
    public var timeToLive: TimeInterval?

    /// Creates request options.
    /// - Parameters:
    ///   - policy: How the request uses the cache.
    ///   - namespace: The namespace; nil = the cache's default.
    ///   - maxStale: The staleness accepted without asking the network.
    ///   - timeToLive: A freshness lifetime replacing the server's.
    ///   - partition: The partition; empty = the shared one.
    public init(policy: HTTPCachePolicy = .useProtocolRules, namespace: String? = nil,
                maxStale: TimeInterval? = nil, timeToLive: TimeInterval? = nil, partition: String = "") {
        self.policy = policy
        self.namespace = namespace
        self.partition = partition
        self.maxStale = maxStale
        self.timeToLive = timeToLive
    }
}
