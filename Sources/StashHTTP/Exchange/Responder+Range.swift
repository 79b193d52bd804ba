import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Range requests (RFC 9110 §14, RFC 9111 §3.3–3.4): ranges are cut from a stored complete response,
/// or served from stored parts; 206 answers are stored as parts by ``ResponseStore/storePart(_:for:replacing:)``.
extension Responder {
    /// Answers a GET with one byte range.
    ///
    /// A stored complete response is used as for any request (fresh, revalidated, stale after a
    /// failure) and the range cut from it. Otherwise stored parts answer a range wholly inside one of
    /// them while fresh; else the request goes to the server, with `If-Range` naming the stored parts'
    /// strong `ETag` so that an unchanged representation comes back as just the missing range.
    func performRange(_ range: ByteRangeSpec, _ context: RequestContext, _ lookup: Lookup) async throws -> Outcome {
        if lookup.stored != nil, context.policy != .reload {
            let whole = try await performOneHop(context.requestWithoutRange, options: context.options)
            let refresh = whole.refresh.map { refresh in
                Task { try await self.cut(range, from: refresh.value, ifRange: context.ifRange) }
            }
            return Outcome(response: cut(range, from: whole.response, ifRange: context.ifRange), refresh: refresh)
        }
        if let partial = lookup.partial, context.policy != .reload, let served = servePart(of: partial, range, context) {
            return Outcome(response: served)
        }
        if context.policy == .cacheOnly { throw HTTPCacheError.notCached(context.url) }
        var request = context.request
        if context.ifRange == nil, let etag = lookup.partial?.headers["etag"], EntityTag.isStrong(etag) {
            request.setValue(etag, forHTTPHeaderField: "If-Range")
        }
        let sent = try RequestContext(request, options: context.options, defaultNamespace: context.namespace)
        rules.count(\.misses)
        do {
            return Outcome(response: try await network.load(sent, lookup, validating: nil, fallingBack: false))
        } catch HTTPCacheError.network(let error) where rules.configuration.isOfflineError(error) {
            // Offline: stored parts that hold the range stand in, by the rules for serving stale.
            guard let partial = lookup.partial, let part = part(of: partial, range, context) else { throw HTTPCacheError.network(underlying: error) }
            return Outcome(response: try rules.serveAfterFailure(part, context, error: error))
        }
    }

    /// RFC 9110 §14.2, §13.1.5: the range of a whole response as a 206 (or a 416 when the range
    /// starts past the end); the whole response when it is not a 200 or `If-Range` names another
    /// representation.
    func cut(_ range: ByteRangeSpec, from whole: CachedResponse, ifRange: String?) -> CachedResponse {
        guard whole.statusCode == 200 else { return whole }
        if let ifRange, !EntityTag.ifRangeMatches(ifRange, headers: whole.headers) { return whole }
        var headers = whole.headers
        let length = whole.body.count
        guard let selected = range.resolved(length: length) else {
            headers["content-range"] = ContentRange.unsatisfiedField(length: length)
            headers["content-length"] = "0"
            return whole.replacing(statusCode: 416, headers: headers, body: Data())
        }
        headers["content-range"] = ContentRange.field(selected, of: length)
        headers["content-length"] = String(selected.count)
        let start = whole.body.startIndex
        return whole.replacing(statusCode: 206, headers: headers, body: Data(whole.body[start + selected.lowerBound...start + selected.upperBound]))
    }

    /// A 206 from stored parts, when one part holds the whole range, the request's `If-Range` (if any)
    /// names the parts' representation, and they may be used without asking.
    private func servePart(of partial: StoredResponse, _ range: ByteRangeSpec, _ context: RequestContext) -> CachedResponse? {
        guard let served = part(of: partial, range, context) else { return nil }
        let freshness = rules.freshness(of: partial, context)
        guard rules.acceptsAnyAge(context) || rules.isUsableWithoutValidation(partial, freshness, context) else { return nil }
        if freshness.isFresh { rules.count(\.hits) } else { rules.count(\.staleServed) }
        return rules.make(served, freshness.isFresh ? .cache : .stale(because: HTTPCacheError.staleAccepted), freshness)
    }

    /// The 206 that stored parts give for `range`, when one part holds all of it and the request's
    /// `If-Range` (if any) names the parts' representation; nil otherwise.
    private func part(of partial: StoredResponse, _ range: ByteRangeSpec, _ context: RequestContext) -> StoredResponse? {
        guard let parts = partial.parts, let selected = range.resolved(length: parts.completeLength),
              let bytes = partial.bytes(of: selected) else { return nil }
        if let ifRange = context.ifRange, !EntityTag.ifRangeMatches(ifRange, headers: partial.headers) { return nil }
        var served = partial
        served.headers["content-range"] = ContentRange.field(selected, of: parts.completeLength)
        served.headers["content-length"] = String(selected.count)
        served.body = bytes
        return served
    }
}

extension CachedResponse {
    /// The same response with another status, header fields and body.
    func replacing(statusCode: Int, headers: HTTPHeaders, body: Data) -> CachedResponse {
        CachedResponse(source: source, url: url, statusCode: statusCode, headers: headers, body: body, age: age,
                       freshnessLifetime: freshnessLifetime, servedAt: servedAt)
    }
}
