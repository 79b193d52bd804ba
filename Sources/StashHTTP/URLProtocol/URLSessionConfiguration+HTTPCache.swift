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
    /// `protocolClasses` is bound to `cache` and to this configuration's `httpAdditionalHeaders`,
    /// which the protocol adds to each request (Foundation does not show them to a protocol).
    ///
    /// Any number of sessions may share one cache. The cache stays alive as long as the process,
    /// or until ``HTTPCacheURLProtocol/unbind(_:)``.
    ///
    /// Unavailable on watchOS, whose URL loading system does not run custom `URLProtocol` classes: a
    /// session made this way would silently bypass the cache. Use ``HTTPCache`` directly there.
    /// - Parameter cache: The cache that answers the requests.
    /// - Returns: A new configuration; this one is left as it is.
    @available(watchOS, unavailable, message: "watchOS does not load custom URLProtocol classes: call HTTPCache.response(for:) directly")
    public func cached(by cache: HTTPCache) -> URLSessionConfiguration {
        // `copy()` of a URLSessionConfiguration is a URLSessionConfiguration on every platform.
        let configuration = copy() as! URLSessionConfiguration
        var headers: [String: String] = [:]
        for (name, value) in httpAdditionalHeaders ?? [:] {
            if let name = name as? String { headers[name] = "\(value)" }
        }
        let bound = URLProtocolBindings.shared.protocolClass(for: cache, additionalHeaders: headers)
        let others = (protocolClasses ?? []).filter { !($0 is HTTPCacheURLProtocol.Type) }
        configuration.protocolClasses = [bound] + others
        configuration.urlCache = nil
        return configuration
    }
}
