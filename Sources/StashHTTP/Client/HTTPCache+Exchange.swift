import Foundation
import Stash
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The outcome of one request: the response to return now and, under `stale-while-revalidate`,
/// the refresh that will deliver a newer one.
struct Outcome: Sendable {
    var response: CachedResponse
    var refresh: Task<CachedResponse, any Error>?
}

extension HTTPCache {
    /// Decides how to answer one request (no redirect followed): from the store, by revalidating, or
    /// from the network.
    func performOneHop(_ request: URLRequest, options: HTTPRequestOptions) async throws -> Outcome {
        let context = try RequestContext(request, options: options, defaultNamespace: configuration.namespace)
        guard StoringRules.cacheableMethods.contains(context.method) else {
            return Outcome(response: try await sendUncached(context))
        }
        let lookup = await lookup(context)
        if let range = context.byteRange, !context.cacheControl.noStore { return try await performRange(range, context, lookup) }
        if lookup.stored == nil, !context.isCallersOwnExchange, !context.cacheControl.noStore,
           let answer = try await headFromStoredGET(context) {
            return Outcome(response: answer)
        }
        if context.isCallersOwnExchange, !context.cacheControl.noStore, let answer = answerCallersConditional(context, lookup) {
            return Outcome(response: answer)
        }
        if context.isCallersOwnExchange || context.cacheControl.noStore {
            return Outcome(response: try await load(context, lookup, validating: nil, fallingBack: false))
        }
        switch context.policy {
        case .reload:
            return Outcome(response: try await load(context, lookup, validating: nil, fallingBack: false))
        case .cacheOnly:
            guard let stored = lookup.stored else { throw HTTPCacheError.notCached(context.url) }
            if !acceptsAnyAge(context), !isUsableWithoutValidation(stored, freshness(of: stored, context), context) {
                throw HTTPCacheError.notCached(context.url) // only-if-cached: nothing stored meets the request
            }
            return Outcome(response: serveWithoutAsking(stored, context))
        case .returnCacheElseLoad:
            if let stored = lookup.stored { return Outcome(response: serveWithoutAsking(stored, context)) }
            count(\.misses)
            return Outcome(response: try await load(context, lookup, validating: nil, fallingBack: false))
        case .revalidate:
            guard let stored = lookup.stored else { return try await loadMiss(context, lookup) }
            let freshness = freshness(of: stored, context)
            if freshness.isFresh, stored.cacheControl.immutable { return Outcome(response: hit(stored, freshness, context)) }
            return Outcome(response: try await load(context, lookup, validating: stored, fallingBack: true))
        case .useProtocolRules:
            guard let stored = lookup.stored else { return try await loadMiss(context, lookup) }
            return try await applyProtocolRules(stored, context, lookup)
        }
    }

    /// RFC 9111 §4: fresh → served; stale → accepted stale, served under `stale-while-revalidate`,
    /// or revalidated (falling back to the stored response when the network fails).
    private func applyProtocolRules(_ stored: StoredResponse, _ context: RequestContext, _ lookup: Lookup) async throws -> Outcome {
        let freshness = freshness(of: stored, context)
        let request = context.cacheControl
        let response = stored.cacheControl
        var mustValidate = response.noCache || request.noCache || request.maxAge == 0
        if let maxAge = request.maxAge, freshness.currentAge > maxAge { mustValidate = true }
        if !mustValidate, freshness.remainingLifetime > (request.minFresh ?? 0) {
            return Outcome(response: hit(stored, freshness, context))
        }
        if !mustValidate, !freshness.isFresh, !response.mustRevalidate {
            let maxStale = [context.options.maxStale, request.maxStale].compactMap { $0 }.max()
            if let maxStale, freshness.staleness <= maxStale {
                count(\.staleServed)
                return Outcome(response: make(stored, .stale(because: HTTPCacheError.staleAccepted), freshness))
            }
            if configuration.honoursStaleWhileRevalidate, let window = response.staleWhileRevalidate, freshness.staleness <= window {
                count(\.staleServed)
                let refresh = startRefresh(context, lookup)
                return Outcome(response: make(stored, .stale(because: HTTPCacheError.revalidationInProgress), freshness), refresh: refresh)
            }
        }
        let variants = await storedVariants(context, lookup)
        return Outcome(response: try await load(context, lookup, validating: stored, fallingBack: true, variants: variants))
    }

    private func loadMiss(_ context: RequestContext, _ lookup: Lookup) async throws -> Outcome {
        count(\.misses)
        let variants = await storedVariants(context, lookup)
        return Outcome(response: try await load(context, lookup, validating: nil, fallingBack: false, variants: variants))
    }

    /// Sends the request (conditionally when `validating` has a validator), stores what may be
    /// stored, turns a 304 into the refreshed stored response, and on a connection error or 5xx
    /// serves the stored response when `fallingBack` and the rules allow.
    ///
    /// `variants` are the other stored `Vary` variants of the URL: their entity tags join the
    /// conditional request, and a 304 may pick one of them (see ``storedVariants(_:_:)``).
    func load(_ context: RequestContext, _ lookup: Lookup, validating stored: StoredResponse?, fallingBack: Bool,
              variants: [StoredResponse] = []) async throws -> CachedResponse {
        // Registered before the request is sent: an invalidation from now on overtakes this exchange.
        let ticket = inFlight.begin(lookup.key)
        let result: Result<CachedResponse, any Error>
        do {
            result = .success(try await InFlightExchanges.$current.withValue(ticket) {
                try await exchange(context, lookup, validating: stored, fallingBack: fallingBack, variants: variants)
            })
        } catch {
            result = .failure(error)
        }
        for key in inFlight.end(ticket) {
            do { try await storage.async.removeObject(forKey: key) } catch { absorb(error) }
        }
        return try result.get()
    }

    /// The exchange of ``load(_:_:validating:fallingBack:variants:)``, run under its ticket.
    private func exchange(_ context: RequestContext, _ lookup: Lookup, validating stored: StoredResponse?, fallingBack: Bool,
                          variants: [StoredResponse]) async throws -> CachedResponse {
        var request = context.request
        var validated = stored.map { addValidators(of: $0, to: &request) } ?? false
        if let tags = Self.ifNoneMatch(own: stored, variants: variants) {
            request.setValue(tags, forHTTPHeaderField: "If-None-Match")
            request.setValue(nil, forHTTPHeaderField: "If-Modified-Since")
            validated = true
        }
        let requestTime = now()
        var received: HTTPTransportResponse
        do {
            let transport = transport
            let sent = request
            received = try await coalescer.run(RequestCoalescer.key(for: request, cacheKey: lookup.key), cacheKey: lookup.key) {
                try await transport.send(sent)
            }
            if received.statusCode == 304, validated, Self.selectVariant(for: received, own: stored, variants: variants) == nil {
                received = try await transport.send(context.request) // a 304 for nothing stored: ask for the response itself
            }
        } catch {
            if fallingBack, let stored = lookup.stored, configuration.isOfflineError(error) {
                return try serveAfterFailure(stored, context, error: error)
            }
            if lookup.stored == nil, let headers = try await headAfterFailure(context, error: error) { return headers }
            throw HTTPCacheError.network(underlying: error)
        }
        let responseTime = now()
        await freshenStoredGET(with: received, context, requestTime: requestTime, responseTime: responseTime)
        if received.statusCode == 304, validated, let selected = Self.selectVariant(for: received, own: stored, variants: variants) {
            return await freshen(selected, with: received, context, lookup, requestTime: requestTime, responseTime: responseTime)
        }
        if (500..<600).contains(received.statusCode), fallingBack, configuration.servesStaleOnServerError, let stored = lookup.stored,
           let served = try? serveAfterFailure(stored, context, error: HTTPCacheError.serverError(statusCode: received.statusCode)) {
            return served
        }
        let fresh = StoredResponse(
            url: context.url, method: context.method, namespace: context.namespace, statusCode: received.statusCode,
            headers: received.headers.removingHopByHopFields(), body: received.body, requestTime: requestTime,
            responseTime: responseTime, varyValues: CacheKey.varyValues(of: context.request, names: StoredResponse.varyNames(received.headers)),
            freshnessLifetimeOverride: context.options.timeToLive)
        let reason = StoringRules.reasonNotToStore(method: context.method, requestCacheControl: context.cacheControl,
                                                   response: received, hasTimeToLive: context.options.timeToLive != nil)
        if reason == nil, received.statusCode == 206 {
            await storePart(fresh, for: context, replacing: lookup)
        } else if reason == nil, !context.isCallersOwnExchange || received.statusCode == 200 {
            await store(fresh, for: context, replacing: lookup)
        } else if lookup.stored != nil, CacheControl(received.headers["cache-control"]).noStore {
            await remove(lookup) // the server no longer wants this URL kept
        }
        return make(fresh, .network, freshness(of: fresh, context, at: responseTime), servedAt: responseTime)
    }

    /// RFC 9111 §4.3.1: `If-None-Match` with the stored `ETag`, else `If-Modified-Since` with the
    /// stored `Last-Modified`. Returns whether a validator was added.
    private func addValidators(of stored: StoredResponse, to request: inout URLRequest) -> Bool {
        if let etag = stored.headers["etag"] {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
            return true
        }
        if let lastModified = stored.headers["last-modified"] {
            request.setValue(lastModified, forHTTPHeaderField: "If-Modified-Since")
            return true
        }
        return false
    }

    /// RFC 9111 §4.3.4: a 304 updates the stored header fields and the exchange times (so the
    /// freshness starts again) and the stored body is served.
    private func freshen(_ stored: StoredResponse, with notModified: HTTPTransportResponse, _ context: RequestContext,
                         _ lookup: Lookup, requestTime: Date, responseTime: Date) async -> CachedResponse {
        var updated = stored
        updated.headers = stored.headers.updated(with: notModified.headers)
        updated.varyValues = CacheKey.varyValues(of: context.request, names: updated.varyNames) // it may be another variant
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        if let ttl = context.options.timeToLive { updated.freshnessLifetimeOverride = ttl }
        await store(updated, for: context, replacing: lookup)
        count(\.revalidations)
        return make(updated, .revalidated, freshness(of: updated, context, at: responseTime), servedAt: responseTime)
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

    /// A stored response served without asking (``HTTPCachePolicy/returnCacheElseLoad``, ``HTTPCachePolicy/cacheOnly``).
    private func serveWithoutAsking(_ stored: StoredResponse, _ context: RequestContext) -> CachedResponse {
        let freshness = freshness(of: stored, context)
        if freshness.isFresh, !stored.cacheControl.noCache { return hit(stored, freshness, context) }
        count(\.staleServed)
        return make(stored, .stale(because: HTTPCacheError.staleAccepted), freshness)
    }

    private func hit(_ stored: StoredResponse, _ freshness: Freshness, _ context: RequestContext) -> CachedResponse {
        count(\.hits)
        return make(stored, .cache, freshness)
    }

    /// Unsafe and other uncached methods: straight to the network; a success invalidates (§4.4).
    private func sendUncached(_ context: RequestContext) async throws -> CachedResponse {
        let received: HTTPTransportResponse
        do {
            received = try await transport.send(context.request)
        } catch {
            throw HTTPCacheError.network(underlying: error)
        }
        if !StoringRules.safeMethods.contains(context.method), (200..<400).contains(received.statusCode) {
            await invalidate(after: context, response: received)
        }
        let servedAt = now()
        return CachedResponse(source: .network, url: context.url, statusCode: received.statusCode, headers: received.headers,
                              body: received.body, age: 0, freshnessLifetime: 0, servedAt: servedAt)
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
}
