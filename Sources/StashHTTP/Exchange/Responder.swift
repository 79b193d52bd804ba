import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcome of one request: the response to return now and, under `stale-while-revalidate`,
/// the refresh that will deliver a newer one.
struct Outcome: Sendable {
    var response: CachedResponse
    var refresh: Task<CachedResponse, any Error>?
}

/// Decides how each request is answered, by the caller's policy and RFC 9111: from the store, by
/// revalidating, or from the network (through the ``NetworkExchange``). ``HTTPCache`` hands every
/// request to it.
struct Responder: Sendable {
    /// The responses.
    let store: ResponseStore
    /// Sends what must go to the server.
    let network: NetworkExchange
    /// How stored responses are served, counted and aged.
    let rules: ServingRules

    /// Decides how to answer one request (no redirect followed): from the store, by revalidating, or
    /// from the network.
    func performOneHop(_ request: URLRequest, options: HTTPRequestOptions) async throws -> Outcome {
        let context = try RequestContext(request, options: options, defaultNamespace: rules.configuration.namespace)
        guard StoringRules.cacheableMethods.contains(context.method) else {
            return Outcome(response: try await network.sendUncached(context))
        }
        let lookup = await store.lookup(context)
        if let range = context.byteRange, !context.cacheControl.noStore { return try await performRange(range, context, lookup) }
        if lookup.stored == nil, !context.isCallersOwnExchange, !context.cacheControl.noStore,
           let answer = try await headFromStoredGET(context) {
            return Outcome(response: answer)
        }
        if context.isCallersOwnExchange, !context.cacheControl.noStore, let answer = answerCallersConditional(context, lookup) {
            return Outcome(response: answer)
        }
        if context.isCallersOwnExchange || context.cacheControl.noStore {
            return Outcome(response: try await network.load(context, lookup, validating: nil, fallingBack: false))
        }
        switch context.policy {
        case .reload:
            return Outcome(response: try await network.load(context, lookup, validating: nil, fallingBack: false))
        case .cacheOnly:
            guard let stored = lookup.stored else { throw HTTPCacheError.notCached(context.url) }
            if !rules.acceptsAnyAge(context), !rules.isUsableWithoutValidation(stored, rules.freshness(of: stored, context), context) {
                throw HTTPCacheError.notCached(context.url) // only-if-cached: nothing stored meets the request
            }
            return Outcome(response: rules.serveWithoutAsking(stored, context))
        case .returnCacheElseLoad:
            if let stored = lookup.stored { return Outcome(response: rules.serveWithoutAsking(stored, context)) }
            rules.count(\.misses)
            return Outcome(response: try await network.load(context, lookup, validating: nil, fallingBack: false))
        case .revalidate:
            guard let stored = lookup.stored else { return try await loadMiss(context, lookup) }
            let freshness = rules.freshness(of: stored, context)
            if freshness.isFresh, stored.cacheControl.immutable { return Outcome(response: rules.hit(stored, freshness, context)) }
            return Outcome(response: try await network.load(context, lookup, validating: stored, fallingBack: true))
        case .useProtocolRules:
            guard let stored = lookup.stored else { return try await loadMiss(context, lookup) }
            return try await applyProtocolRules(stored, context, lookup)
        }
    }

    /// RFC 9111 §4: fresh → served; stale → accepted stale, served under `stale-while-revalidate`,
    /// or revalidated (falling back to the stored response when the network fails).
    private func applyProtocolRules(_ stored: StoredResponse, _ context: RequestContext, _ lookup: Lookup) async throws -> Outcome {
        let freshness = rules.freshness(of: stored, context)
        let request = context.cacheControl
        let response = stored.cacheControl
        var mustValidate = response.noCache || request.noCache || request.maxAge == 0
        if let maxAge = request.maxAge, freshness.currentAge > maxAge { mustValidate = true }
        if !mustValidate, freshness.remainingLifetime > (request.minFresh ?? 0) {
            return Outcome(response: rules.hit(stored, freshness, context))
        }
        if !mustValidate, !freshness.isFresh, !response.mustRevalidate {
            let maxStale = [context.options.maxStale, request.maxStale].compactMap { $0 }.max()
            if let maxStale, freshness.staleness <= maxStale {
                rules.count(\.staleServed)
                return Outcome(response: rules.make(stored, .stale(because: HTTPCacheError.staleAccepted), freshness))
            }
            if rules.configuration.honoursStaleWhileRevalidate, let window = response.staleWhileRevalidate, freshness.staleness <= window {
                rules.count(\.staleServed)
                let refresh = network.startRefresh(context, lookup)
                return Outcome(response: rules.make(stored, .stale(because: HTTPCacheError.revalidationInProgress), freshness),
                               refresh: refresh)
            }
        }
        let variants = await store.storedVariants(context, lookup)
        return Outcome(response: try await network.load(context, lookup, validating: stored, fallingBack: true, variants: variants))
    }

    private func loadMiss(_ context: RequestContext, _ lookup: Lookup) async throws -> Outcome {
        rules.count(\.misses)
        let variants = await store.storedVariants(context, lookup)
        return Outcome(response: try await network.load(context, lookup, validating: nil, fallingBack: false, variants: variants))
    }
}
