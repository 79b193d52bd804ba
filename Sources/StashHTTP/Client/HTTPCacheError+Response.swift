import Foundation

extension HTTPCacheError {
    /// The HTTP answer RFC 9111 prescribes for this error, for code that must hand a response on
    /// instead of an error (a `URLProtocol`, a local proxy): for ``notCached(_:)``, a `504 Gateway
    /// Timeout` with an empty body, as a cache answers `only-if-cached` with nothing stored
    /// (RFC 9111 §5.2.1.7). nil for the other cases, which have no such answer.
    ///
    /// The cache itself throws ``notCached(_:)`` rather than returning this response, so that Swift
    /// callers can never mistake it for one the server sent.
    public var equivalentResponse: HTTPTransportResponse? {
        guard case .notCached = self else { return nil }
        return HTTPTransportResponse(statusCode: 504, headers: ["Content-Length": "0", "Cache-Control": "no-store"])
    }
}

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
