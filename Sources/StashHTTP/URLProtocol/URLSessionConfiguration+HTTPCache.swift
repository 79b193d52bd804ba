#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

extension URLSessionConfiguration {
    /// A copy of this configuration whose sessions answer requests through `cache`: existing
    /// `URLSession` code gets the offline cache without changing its call sites.
    ///
    /// ```swift
    /// let session = URLSession(configuration: .default.cached(by: cache))
    /// let (data, response) = try await session.data(from: todosURL)   // fresh, revalidated, or stale when offline
    /// ```
    ///
    /// GET and HEAD requests go through the cache with the policy their `cachePolicy` maps to
    /// (see ``HTTPCachePolicy/init(_:)``); other methods go to the network and, when they succeed,
    /// remove what is stored for their URL (RFC 9111 §4.4). Every response carries a `Stash-Cache`
    /// header field (``HTTPCacheStatus``). The copy's `urlCache` is nil (Foundation's cache would
    /// only duplicate the store), and the class ``HTTPCacheURLProtocol`` puts first in
    /// `protocolClasses` is bound to `cache` and to the settings of this configuration that a
    /// protocol is not shown, which it applies to each request as the session would: the
    /// `httpAdditionalHeaders`, `requestCachePolicy`, `timeoutIntervalForRequest`, the cookie
    /// storage (`httpShouldSetCookies`, `httpCookieStorage`) and `allowsCellularAccess`. They are read
    /// now: change the configuration afterwards and call this again. `Docs/OfflineHTTP.md` lists the
    /// settings that cannot be kept.
    ///
    /// Responses are kept apart by `partition`: by default per credential, so one user's response is
    /// never served to a session with another user's `Authorization` or cookies.
    ///
    /// Any number of sessions may share one cache. The cache stays alive as long as the process,
    /// or until ``HTTPCacheURLProtocol/unbind(_:)``.
    ///
    /// Unavailable on watchOS, whose URL loading system does not run custom `URLProtocol` classes: a
    /// session made this way would silently bypass the cache. Use ``HTTPCache`` directly there.
    /// - Parameters:
    ///   - cache: The cache that answers the requests.
    ///   - partition: How the session's stored responses are kept apart from other sessions' and
    ///     users' (``HTTPCachePartitioning``). Default: ``HTTPCachePartitioning/byCredentials``.
    /// - Returns: A new configuration; this one is left as it is.
    @available(watchOS, unavailable, message: "watchOS does not load custom URLProtocol classes: call HTTPCache.response(for:) directly")
    public func cached(by cache: HTTPCache, partition: HTTPCachePartitioning = .byCredentials) -> URLSessionConfiguration {
        // `copy()` of a URLSessionConfiguration is a URLSessionConfiguration on every platform.
        let configuration = copy() as! URLSessionConfiguration
        let settings = SessionSettings(self, partitioning: partition)
        let bound = URLProtocolBindings.shared.protocolClass(for: cache, settings: settings)
        let others = (protocolClasses ?? []).filter { !($0 is HTTPCacheURLProtocol.Type) }
        configuration.protocolClasses = [bound] + others
        configuration.urlCache = nil
        return configuration
    }
}
