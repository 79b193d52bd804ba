import Foundation
import Stash
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache's exchanges with the server: sends a request (conditionally when something is stored
/// to revalidate), stores what may be stored, and turns failures into stale responses where the
/// rules allow. The ``Responder`` decides when to call it.
struct NetworkExchange: Sendable {
    /// The responses, read and written around each exchange.
    let store: ResponseStore
    /// Sends the requests.
    let transport: any HTTPTransport
    /// How stored responses are served, counted and aged.
    let rules: ServingRules
    /// Concurrent identical requests share one exchange.
    let coalescer: RequestCoalescer
    /// Exchanges that an invalidation may overtake.
    let inFlight: InFlightExchanges
    /// `stale-while-revalidate` refreshes still running, so ``waitForBackgroundRefreshes()`` can await them.
    let refreshes = Locked<[UUID: Task<Void, Never>]>([:])

    /// Sends the request (conditionally when `validating` has a validator), stores what may be
    /// stored, turns a 304 into the refreshed stored response, and on a connection error or 5xx
    /// serves the stored response when `fallingBack` and the rules allow.
    ///
    /// `variants` are the other stored `Vary` variants of the URL: their entity tags join the
    /// conditional request, and a 304 may pick one of them (see ``ResponseStore/storedVariants(_:_:)``).
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
            do { try await store.storage.async.removeObject(forKey: key) } catch { store.absorb(error) }
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
        let requestTime = rules.now()
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
            if fallingBack, let stored = lookup.stored, rules.configuration.isOfflineError(error) {
                return try rules.serveAfterFailure(stored, context, error: error)
            }
            if lookup.stored == nil, let headers = try await headAfterFailure(context, error: error) { return headers }
            throw HTTPCacheError.network(underlying: error)
        }
        let responseTime = rules.now()
        await freshenStoredGET(with: received, context, requestTime: requestTime, responseTime: responseTime)
        if received.statusCode == 304, validated, let selected = Self.selectVariant(for: received, own: stored, variants: variants) {
            return await freshen(selected, with: received, context, lookup, requestTime: requestTime, responseTime: responseTime)
        }
        if (500..<600).contains(received.statusCode), fallingBack, rules.configuration.servesStaleOnServerError, let stored = lookup.stored,
           let served = try? rules.serveAfterFailure(stored, context, error: HTTPCacheError.serverError(statusCode: received.statusCode)) {
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
            await store.storePart(fresh, for: context, replacing: lookup)
        } else if reason == nil, !context.isCallersOwnExchange || received.statusCode == 200 {
            await store.store(fresh, for: context, replacing: lookup)
        } else if lookup.stored != nil, CacheControl(received.headers["cache-control"]).noStore {
            await store.remove(lookup) // the server no longer wants this URL kept
        }
        return rules.make(fresh, .network, rules.freshness(of: fresh, context, at: responseTime), servedAt: responseTime)
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
        await store.store(updated, for: context, replacing: lookup)
        rules.count(\.revalidations)
        return rules.make(updated, .revalidated, rules.freshness(of: updated, context, at: responseTime), servedAt: responseTime)
    }

    /// Unsafe and other uncached methods: straight to the network; a success invalidates (§4.4).
    func sendUncached(_ context: RequestContext) async throws -> CachedResponse {
        let received: HTTPTransportResponse
        do {
            received = try await transport.send(context.request)
        } catch {
            throw HTTPCacheError.network(underlying: error)
        }
        if !StoringRules.safeMethods.contains(context.method), (200..<400).contains(received.statusCode) {
            await store.invalidate(after: context, response: received)
        }
        let servedAt = rules.now()
        return CachedResponse(source: .network, url: context.url, statusCode: received.statusCode, headers: received.headers,
                              body: received.body, age: 0, freshnessLifetime: 0, servedAt: servedAt)
    }
}
