import Foundation

/// A HEAD answered from the store (RFC 9111 §4): with the header fields of a stored GET response.
/// What a HEAD exchange does to that GET response is ``NetworkExchange``'s (`NetworkExchange+Head.swift`).
extension Responder {
    /// A HEAD answered from a stored GET response when no HEAD response is stored and the GET
    /// response may be used without asking (fresh under the request's directives, stale within its
    /// `max-stale`, or any age under ``HTTPCachePolicy/returnCacheElseLoad`` and
    /// ``HTTPCachePolicy/cacheOnly``); nil otherwise.
    func headFromStoredGET(_ context: RequestContext) async throws -> CachedResponse? {
        guard context.method == "HEAD", context.policy != .reload, context.policy != .revalidate else { return nil }
        let (get, lookup) = try await store.storedGET(for: context)
        guard var stored = lookup.stored else { return nil }
        stored.body = Data()
        let freshness = rules.freshness(of: stored, get)
        guard rules.acceptsAnyAge(context) || rules.isUsableWithoutValidation(stored, freshness, context) else { return nil }
        if freshness.isFresh { rules.count(\.hits) } else { rules.count(\.staleServed) }
        return rules.make(stored, freshness.isFresh ? .cache : .stale(because: HTTPCacheError.staleAccepted), freshness)
    }
}
