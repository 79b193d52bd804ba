import Foundation

/// Whether a stored response may answer a request without asking the server.
extension HTTPCache {
    /// Whether `stored` may answer the request without asking the server, by the request's and the
    /// response's directives (RFC 9111 §4.2, §4.2.4, §5.2.1): fresh enough for `max-age` and
    /// `min-fresh` and not `no-cache`, or stale within the `max-stale` the request accepts (never
    /// against `must-revalidate`).
    func isUsableWithoutValidation(_ stored: StoredResponse, _ freshness: Freshness, _ context: RequestContext) -> Bool {
        let request = context.cacheControl
        let response = stored.cacheControl
        if response.noCache || request.noCache { return false }
        if let maxAge = request.maxAge, freshness.currentAge > maxAge { return false }
        if freshness.remainingLifetime > (request.minFresh ?? 0) { return true }
        guard !freshness.isFresh, !response.mustRevalidate,
              let maxStale = [context.options.maxStale, request.maxStale].compactMap({ $0 }).max() else { return false }
        return freshness.staleness <= maxStale
    }

    /// Whether the request accepts a stored response of any age: the caller chose
    /// ``HTTPCachePolicy/returnCacheElseLoad`` or ``HTTPCachePolicy/cacheOnly``. The request directive
    /// `only-if-cached` alone does not: it asks for a stored response that meets the request's
    /// other constraints, and a stale one only within `max-stale` (RFC 9111 §5.2.1.7, §4.2.4).
    func acceptsAnyAge(_ context: RequestContext) -> Bool {
        context.options.policy == .returnCacheElseLoad || context.options.policy == .cacheOnly
    }
}
