import Foundation
import Stash

/// The rules for handing a stored response to the caller, shared by the ``Responder`` (which serves
/// without asking) and the ``NetworkExchange`` (which serves after a failure): how fresh it is,
/// whether it may be used without asking, what it looks like when served, and what is counted.
struct ServingRules: Sendable {
    /// How the cache behaves.
    let configuration: HTTPCacheConfiguration
    /// The clock freshness is measured against.
    let now: @Sendable () -> Date
    /// The counters behind ``HTTPCache/statistics``.
    let counters: Locked<HTTPCacheStatistics>

    func count(_ counter: WritableKeyPath<HTTPCacheStatistics, Int>) {
        counters.withLock { $0[keyPath: counter] += 1 }
    }

    func freshness(of stored: StoredResponse, _ context: RequestContext, at date: Date? = nil) -> Freshness {
        Freshness(of: stored, at: date ?? now(), heuristics: configuration.heuristics, lifetimeOverride: context.options.timeToLive)
    }

    /// The response handed to the caller. What comes from the store carries an `Age` field with its
    /// current age (RFC 9111 §5.1, §4), replacing the one the origin sent; the store keeps the origin's.
    func make(_ stored: StoredResponse, _ source: ResponseSource, _ freshness: Freshness, servedAt: Date? = nil) -> CachedResponse {
        var headers = stored.headers
        if source.isFromCache { headers["age"] = Freshness.ageField(freshness.currentAge) }
        return CachedResponse(source: source, url: stored.url, statusCode: stored.statusCode, headers: headers, body: stored.body,
                              age: freshness.currentAge, freshnessLifetime: freshness.lifetime, servedAt: servedAt ?? now())
    }

    // MARK: Usability

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

    // MARK: Serving

    /// A stored response served without asking (``HTTPCachePolicy/returnCacheElseLoad``, ``HTTPCachePolicy/cacheOnly``).
    func serveWithoutAsking(_ stored: StoredResponse, _ context: RequestContext) -> CachedResponse {
        let freshness = freshness(of: stored, context)
        if freshness.isFresh, !stored.cacheControl.noCache { return hit(stored, freshness, context) }
        count(\.staleServed)
        return make(stored, .stale(because: HTTPCacheError.staleAccepted), freshness)
    }

    func hit(_ stored: StoredResponse, _ freshness: Freshness, _ context: RequestContext) -> CachedResponse {
        count(\.hits)
        return make(stored, .cache, freshness)
    }

    /// After a connection error or a 5xx: the stored response, unless `must-revalidate` or `no-cache`
    /// forbid serving it stale (RFC 9111 §4.2.4) or it is staler than the configured limit; a
    /// `stale-if-error` window (RFC 5861 §4) allows it regardless.
    func serveAfterFailure(_ stored: StoredResponse, _ context: RequestContext, error: any Error) throws -> CachedResponse {
        let freshness = freshness(of: stored, context)
        let directives = stored.cacheControl
        let staleIfError = [directives.staleIfError, context.cacheControl.staleIfError].compactMap { $0 }.max()
        let withinStaleIfError = staleIfError.map { freshness.staleness <= $0 } ?? false
        let forbidden = (directives.noCache || (directives.mustRevalidate && !freshness.isFresh))
            && !configuration.servesStaleDespiteMustRevalidate
        let withinLimit = configuration.maxStalenessOnError.map { freshness.staleness <= $0 } ?? true
        guard withinStaleIfError || (!forbidden && withinLimit) else {
            throw HTTPCacheError.staleNotAllowed(underlying: error)
        }
        count(\.staleServed)
        return make(stored, .stale(because: error), freshness)
    }
}
