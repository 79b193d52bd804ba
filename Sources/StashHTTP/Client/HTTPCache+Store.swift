import Foundation
import Stash
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPCache {
    /// Finds the stored response for a request: first the `Vary` names recorded for its URL, then
    /// the variant selected by the request's values of those headers (RFC 9111 §4.1).
    func lookup(_ context: RequestContext) async -> Lookup {
        // Force-unwrapped: RequestContext already checked that the URL normalizes.
        let base = CacheKey.response(for: context.request, namespace: context.namespace, partition: context.partition, varyNames: [])!
        let names = await read(varyIndex, base.varyRecordKey.rawValue)?.names ?? []
        let key = names.isEmpty ? base
            : CacheKey.response(for: context.request, namespace: context.namespace, partition: context.partition, varyNames: names)!
        var stored = await read(storage, key.rawValue)
        // A foreign entry is never served: another method's, or one whose own URL is not the key's (a
        // version that sorted repeated query items by value stored `?a=2&a=1` under `?a=1&a=2`).
        if let response = stored, response.method != context.method || URLNormalizer.normalize(response.url) != key.url { stored = nil }
        if let response = stored, response.isIncomplete { return Lookup(key: key, varyNames: names, stored: nil, partial: response) }
        return Lookup(key: key, varyNames: names, stored: stored)
    }

    /// Stores `response` for the request of `context`, updating the `Vary` record when the server's
    /// `Vary` changed (and dropping the variant stored under the old names).
    func store(_ response: StoredResponse, for context: RequestContext, replacing lookup: Lookup) async {
        let names = response.varyNames
        guard let key = CacheKey.response(for: context.request, namespace: context.namespace, partition: context.partition,
                                          varyNames: names) else { return }
        // An exchange that an invalidation overtook must not bring back what it removed.
        guard InFlightExchanges.current?.recordStore(of: key) ?? true else { return }
        do {
            if names != lookup.varyNames {
                if names.isEmpty {
                    try await varyIndex.async.removeObject(forKey: key.varyRecordKey.rawValue)
                } else {
                    try await varyIndex.async.setObject(VaryRecord(names: names), forKey: key.varyRecordKey.rawValue, expiry: .never)
                }
                if lookup.key != key { try await storage.async.removeObject(forKey: lookup.key.rawValue) }
            }
            try await storage.async.setObject(response, forKey: key.rawValue, expiry: .never)
        } catch {
            absorb(error)
        }
    }

    /// Removes the stored response a lookup found (a `no-store` answer replaced it).
    func remove(_ lookup: Lookup) async {
        do {
            try await storage.async.removeObject(forKey: lookup.key.rawValue)
        } catch {
            absorb(error)
        }
    }

    /// RFC 9111 §4.4: after a successful unsafe request, everything stored for its URL in its
    /// namespace goes (all methods, all variants, all partitions), and so does what is stored for a
    /// `Location` or `Content-Location` on the same origin.
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

    /// Reads a value; a missing one is nil, other failures (an undecodable entry, which Stash keeps until
    /// the next write replaces it, or a damaged one, which Stash drops) are reported and read as nil
    /// too, so a damaged store costs a network request, not an error.
    func read<Value: Sendable>(_ view: Storage<Value>, _ key: String) async -> Value? {
        do {
            return try await view.async.entry(forKey: key).object
        } catch StorageError.notFound {
            return nil
        } catch {
            absorb(error)
            return nil
        }
    }
}
