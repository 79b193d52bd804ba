import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A client's own conditional request answered from the store (RFC 9111 §4.3.2, RFC 9110 §13.2).
extension Responder {
    /// Fields whose preconditions the cache does not evaluate: such a request goes to the server.
    private static let fieldsForTheServer = ["If-Match", "If-Unmodified-Since", "If-Range", "Range"]

    /// Answers a GET or HEAD carrying the caller's own `If-None-Match` or `If-Modified-Since` from a
    /// stored response that may be used without asking: a `304 Not Modified` when the precondition
    /// says the caller's copy is current, the stored response otherwise. nil (the request goes to the
    /// server) when nothing usable is stored or the request carries preconditions the cache leaves to
    /// the server.
    ///
    /// RFC 9110 §13.2.2: `If-None-Match` is evaluated with the weak comparison (`*` matches any stored
    /// response), and `If-Modified-Since` only without it, against `Last-Modified` (or `Date`).
    func answerCallersConditional(_ context: RequestContext, _ lookup: Lookup) -> CachedResponse? {
        guard let stored = lookup.stored,
              !Self.fieldsForTheServer.contains(where: { context.request.value(forHTTPHeaderField: $0) != nil }) else { return nil }
        let freshness = rules.freshness(of: stored, context)
        guard rules.acceptsAnyAge(context)
                || (context.policy == .useProtocolRules && rules.isUsableWithoutValidation(stored, freshness, context))
        else { return nil }
        let notModified: Bool
        let now = rules.now
        if let ifNoneMatch = context.request.value(forHTTPHeaderField: "If-None-Match") {
            let tags = ifNoneMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            notModified = tags.contains("*") || stored.headers["etag"].map { etag in tags.contains { EntityTag.weaklyEqual($0, etag) } } ?? false
        } else if let ifModifiedSince = context.request.value(forHTTPHeaderField: "If-Modified-Since") {
            guard let since = HTTPDate.parse(ifModifiedSince, relativeTo: now()),
                  let modified = (stored.headers["last-modified"] ?? stored.headers["date"]).flatMap({ HTTPDate.parse($0, relativeTo: now()) })
            else { return nil }
            notModified = modified <= since
        } else {
            return nil
        }
        if freshness.isFresh { rules.count(\.hits) } else { rules.count(\.staleServed) }
        let source: ResponseSource = freshness.isFresh ? .cache : .stale(because: HTTPCacheError.staleAccepted)
        var answer = stored
        if notModified {
            answer.statusCode = 304
            answer.body = Data()
        }
        return rules.make(answer, source, freshness)
    }
}
