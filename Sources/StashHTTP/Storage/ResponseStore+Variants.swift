import Foundation
import Stash

/// Several `Vary` variants of one URL (RFC 9111 §4.1, §4.3.1): each is kept under its own key, and
/// a conditional request names every stored variant's entity tag (see
/// ``NetworkExchange/ifNoneMatch(own:variants:)`` and ``NetworkExchange/selectVariant(for:own:variants:)``).
extension ResponseStore {
    /// The other complete responses stored for the request's URL, namespace and method (the variants
    /// selected by other values of the `Vary` headers) that carry an `ETag`.
    func storedVariants(_ context: RequestContext, _ lookup: Lookup) async -> [StoredResponse] {
        guard !lookup.varyNames.isEmpty else { return [] }
        var variants: [StoredResponse] = []
        for raw in storage.allKeys where raw != lookup.key.rawValue {
            guard let key = CacheKey(rawValue: raw), key.kind == .response, key.namespace == context.namespace,
                  key.method == context.method, key.url == lookup.key.url,
                  let response = await read(storage, raw), !response.isIncomplete, response.headers["etag"] != nil else { continue }
            variants.append(response)
        }
        return variants
    }
}
