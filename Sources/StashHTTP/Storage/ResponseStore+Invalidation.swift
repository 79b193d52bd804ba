import Foundation
import Stash
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// RFC 9111 §4.4: what a successful unsafe request leaves stored is removed, and exchanges in flight
/// for it store nothing (see ``InFlightExchanges``).
extension ResponseStore {
    /// After a successful unsafe request, everything stored for its URL in its namespace goes (all
    /// methods, all variants, all partitions), and so does what is stored for a `Location` or
    /// `Content-Location` on the same origin.
    func invalidate(after context: RequestContext, response: HTTPTransportResponse) async {
        let urls = Self.invalidatedURLs(context, response), namespace = context.namespace
        do {
            try await removeKeys(poisoning: true) { $0.namespace == namespace && urls.contains($0.url) }
        } catch {
            absorb(error)
        }
    }

    /// The normalized URLs an unsafe request invalidates: its own, and a same-origin `Location` and
    /// `Content-Location` of its response.
    private static func invalidatedURLs(_ context: RequestContext, _ response: HTTPTransportResponse) -> Set<String> {
        var urls: Set<String> = []
        if let url = URLNormalizer.normalize(context.url) { urls.insert(url) }
        for field in ["location", "content-location"] {
            guard let value = response.headers[field], let target = URL(string: value, relativeTo: context.url)?.absoluteURL,
                  target.scheme?.lowercased() == context.url.scheme?.lowercased(),
                  target.host?.lowercased() == context.url.host?.lowercased(), target.port == context.url.port,
                  let normalized = URLNormalizer.normalize(target) else { continue }
            urls.insert(normalized)
        }
        return urls
    }

    /// RFC 9111 §4.4 for a request the cache did not send itself (Foundation loaded it, see
    /// `HTTPCacheURLProtocol+HandOff.swift`): when its method is unsafe and `response` a success,
    /// what is stored for its URL is invalidated as if the cache had sent it.
    ///
    /// Synchronous, with the store's blocking calls: it runs on Foundation's queue, which must not
    /// wait for work on the cooperative pool (whose threads may themselves be waiting for that queue).
    func invalidateSynchronously(after request: URLRequest, response: HTTPTransportResponse) {
        guard let context = try? RequestContext(request, options: HTTPRequestOptions(), defaultNamespace: configuration.namespace),
              !StoringRules.safeMethods.contains(context.method), (200..<400).contains(response.statusCode) else { return }
        let urls = Self.invalidatedURLs(context, response), namespace = context.namespace
        let selected: (CacheKey) -> Bool = { $0.namespace == namespace && urls.contains($0.url) }
        inFlight.invalidate(where: selected)
        coalescer.detach(where: selected)
        for raw in storage.allKeys {
            guard let key = CacheKey(rawValue: raw), selected(key) else { continue }
            do { try storage.removeObject(forKey: raw) } catch { absorb(error) }
        }
    }

    /// Removes every key the HTTP cache wrote that `predicate` selects. With `poisoning`, first marks
    /// the exchanges in flight for the selected URLs, so that their answers (which may predate the
    /// removal) are not stored, and detaches them from the coalescer, so that later requests do not
    /// join them: see ``InFlightExchanges``.
    func removeKeys(poisoning: Bool = false, where predicate: (CacheKey) -> Bool) async throws {
        if poisoning {
            inFlight.invalidate(where: predicate)
            coalescer.detach(where: predicate)
        }
        for raw in storage.allKeys {
            guard let key = CacheKey(rawValue: raw), predicate(key) else { continue }
            try await storage.async.removeObject(forKey: raw)
        }
    }
}
