import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// HEAD and the stored GET response on the network side (RFC 9111 §4 and §4.3.5): offline, a HEAD
/// falls back on the stored GET response, and a HEAD response from the server freshens (or
/// invalidates) the stored GET response it describes. ``Responder/headFromStoredGET(_:)`` answers
/// a HEAD from the store without asking.
extension NetworkExchange {
    /// Offline, a HEAD with no HEAD response stored is answered from the stored GET response, by the
    /// rules for serving stale after a failure; nil when there is none (or the policy is a reload).
    func headAfterFailure(_ context: RequestContext, error: any Error) async throws -> CachedResponse? {
        guard context.method == "HEAD", context.policy != .reload, !context.isCallersOwnExchange, rules.configuration.isOfflineError(error),
              let (get, lookup) = try? await store.storedGET(for: context), var stored = lookup.stored else { return nil }
        stored.body = Data()
        return try rules.serveAfterFailure(stored, get, error: error)
    }

    /// §4.3.5: after a 200 answer to a HEAD, the stored GET response it could stand for is updated
    /// with its header fields when the validators it sends (`ETag`, `Last-Modified`) and its
    /// `Content-Length` agree with the stored ones, and removed otherwise (a newer representation exists).
    func freshenStoredGET(with head: HTTPTransportResponse, _ context: RequestContext, requestTime: Date, responseTime: Date) async {
        guard context.method == "HEAD", head.statusCode == 200, let (get, lookup) = try? await store.storedGET(for: context),
              let stored = lookup.stored else { return }
        let validators = ["etag", "last-modified"].filter { head.headers[$0] != nil }
        let matches = !validators.isEmpty && validators.allSatisfy { head.headers[$0] == stored.headers[$0] }
            && head.headers["content-length"].map { Int($0) == stored.body.count || $0 == stored.headers["content-length"] } ?? true
        guard matches else {
            await store.remove(lookup)
            return
        }
        var updated = stored
        updated.headers = stored.headers.updated(with: head.headers)
        updated.requestTime = requestTime
        updated.responseTime = responseTime
        await store.store(updated, for: get, replacing: lookup)
    }
}
