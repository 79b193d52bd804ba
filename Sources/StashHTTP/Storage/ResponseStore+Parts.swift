import Foundation

/// Stored 206 answers (RFC 9111 §3.4): parts that share a strong validator are combined, and parts
/// that add up to the whole representation become a complete response.
extension ResponseStore {
    /// Stores a 206: combined with the stored parts when both carry the same strong `ETag` and
    /// complete length (the new response's header fields replace the stored ones), else in their
    /// place. Parts that add up to the whole representation become a complete 200 response.
    func storePart(_ received: StoredResponse, for context: RequestContext, replacing lookup: Lookup) async {
        guard let contentRange = received.headers["content-range"].flatMap(ContentRange.init),
              let completeLength = contentRange.completeLength, received.body.count == contentRange.range.count else { return }
        var base = received
        base.statusCode = 206
        base.body = Data()
        base.parts = PartialContent(completeLength: completeLength, ranges: [])
        if let partial = lookup.partial, let parts = partial.parts, parts.completeLength == completeLength,
           EntityTag.stronglyEqual(partial.headers["etag"], received.headers["etag"]) {
            base = partial
            base.headers = partial.headers.updated(with: received.headers)
            base.requestTime = received.requestTime
            base.responseTime = received.responseTime
            base.freshnessLifetimeOverride = received.freshnessLifetimeOverride ?? partial.freshnessLifetimeOverride
        }
        base.headers["content-range"] = nil
        base.headers["content-length"] = nil
        let combined = base.adding((contentRange.range, received.body), completeLength: completeLength)
        await store(combined, for: context, replacing: lookup)
    }
}
