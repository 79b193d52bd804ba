import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HEAD and the stored GET response (RFC 9111 §4 and §4.3.5): a HEAD is answered with the header
/// fields of a stored GET response, and a HEAD response from the server freshens (or invalidates)
/// the stored GET response it describes.
extension HTTPCache {
    /// The stored GET response for the same URL, namespace and variant as a HEAD request, with the
    /// context of that GET.
    func storedGET(for head: RequestContext) async throws -> (RequestContext, Lookup) {
        var request = head.request
        request.httpMethod = "GET"
        let get = try RequestContext(request, options: head.options, defaultNamespace: head.namespace)
        return (get, await lookup(get))
    }

    /// A HEAD answered from a stored GET response when no HEAD response is stored and the GET
    /// response may be used without asking (fresh under the request's directives, stale within its
    /// `max-stale`, or any age under ``HTTPCachePolicy/returnCacheElseLoad`` and
    /// ``HTTPCachePolicy/cacheOnly``); nil otherwise.
    func headFromStoredGET(_ context: RequestContext) async throws -> CachedResponse? {
        guard context.method == "HEAD", context.policy != .reload, context.policy != .revalidate else { return nil }
        let (get, lookup) = try await storedGET(for: context)
        guard var stored = lookup.stored else { return nil }
        stored.body = Data()
        let freshness = freshness(of: stored, get)
        guard acceptsAnyAge(context) || isUsableWithoutValidation(stored, freshness, context) else { return nil }
        if freshness.isFresh { count(\.hits) } else { count(\.staleServed) }
        return make(stored, freshness.isFresh ? .cache : .stale(because: HTTPCacheError.staleAccepted), freshness)
    }

    /// Offline, a HEAD with no HEAD response stored is answered from the stored GET response, by the
    /// rules for serving stale after a failure; nil when there is none (or the policy is a reload).
    func headAfterFailure(_ context: RequestContext, error: any Error) async throws -> CachedResponse? {
        guard context.method == "HEAD", context.policy != .reload, !context.isCallersOwnExchange, configuration.isOfflineError(error),
              let (get, lookup) = try? await storedGET(for: context), var stored = lookup.stored else { return nil }
        stored.body = Data()
        return try serveAfterFailure(stored, get, error: error)
    }

    /// §4.3.5: after a 200 answer to a HEAD, the stored GET response it could stand for is updated
    /// with its header fields when the validators it sends (`ETag`, `Last-Modified`) and its
    /// `Content-Length` agree with the stored ones, and removed otherwise (a newer representation exists).
    func freshenStoredGET(with head: HTTPTransportResponse, _ context: RequestContext, requestTime: Date, responseTime: Date) async {
        guard context.method == "HEAD", head.statusCode == 200, let (get, lookup) = try? await storedGET(for: context),
              let stored = lookup.stored else { return }
        let validators = ["etag", "last-modified"].filter { head.headers[$0] != nil }
        let matches = !validators.isEmpty && validators.allSatisfy { head.headers[$0] == stored.headers[$0] }
            && head.headers["content-length"].map { Int($0) == stored.body.count || $0 == stored.headers["content-length"] } ?? true
        guard matches else {
            await remove(lookup)
            return
        }
        var updated = stored
        updated.headers = stored.headers.updated(with: head.headers)
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        await store(updated, for: get, replacing: lookup)
    }
}
