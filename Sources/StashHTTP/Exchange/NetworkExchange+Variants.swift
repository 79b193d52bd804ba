import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Several `Vary` variants of one URL in a conditional request (RFC 9111 §4.3.1, §4.3.4): it names
/// every stored variant's entity tag (``ResponseStore/storedVariants(_:_:)`` finds them), and a 304
/// picks the variant whose tag it carries, which then also answers the request that asked.
extension NetworkExchange {
    /// §4.3.1: the `If-None-Match` value listing the entity tags of the request's own stored response
    /// (if any) and of the other variants, each once; nil when there are no other variants or the
    /// request's own response validates by date only.
    static func ifNoneMatch(own stored: StoredResponse?, variants: [StoredResponse]) -> String? {
        guard !variants.isEmpty, stored == nil || stored?.headers["etag"] != nil else { return nil }
        var tags: [String] = []
        for tag in ([stored].compactMap { $0 } + variants).compactMap({ $0.headers["etag"] }) where !tags.contains(tag) {
            tags.append(tag)
        }
        return tags.joined(separator: ", ")
    }

    /// §4.3.4: the stored response a 304 freshens. When only the request's own stored response was
    /// validated, that one (whatever `ETag` the 304 carries: the server may have added one). Among
    /// several variants, the one carrying the 304's strong tag, else (a weak tag) the most recent one
    /// that matches weakly; a 304 without a tag freshens the request's own stored response.
    static func selectVariant(for notModified: HTTPTransportResponse, own stored: StoredResponse?,
                              variants: [StoredResponse]) -> StoredResponse? {
        guard !variants.isEmpty, let tag = notModified.headers["etag"] else { return stored }
        let candidates = [stored].compactMap { $0 } + variants
        if let strong = candidates.first(where: { EntityTag.stronglyEqual($0.headers["etag"], tag) }) { return strong }
        return candidates.filter { $0.headers["etag"].map { EntityTag.weaklyEqual($0, tag) } ?? false }
            .max { $0.responseTime < $1.responseTime }
    }
}
