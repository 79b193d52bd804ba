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
        let base = CacheKey.response(for: context.request, namespace: context.namespace, varyNames: [])!
        let names = await read(varyIndex, base.varyRecordKey.rawValue)?.names ?? []
        let key = names.isEmpty ? base : CacheKey.response(for: context.request, namespace: context.namespace, varyNames: names)!
        var stored = await read(storage, key.rawValue)
        if let response = stored, response.method != context.method { stored = nil } // a foreign entry: never serve it
        return Lookup(key: key, varyNames: names, stored: stored)
    }

    /// Stores `response` for the request of `context`, updating the `Vary` record when the server's
    /// `Vary` changed (and dropping the variant stored under the old names).
    func store(_ response: StoredResponse, for context: RequestContext, replacing lookup: Lookup) async {
        let names = response.varyNames
        guard let key = CacheKey.response(for: context.request, namespace: context.namespace, varyNames: names) else { return }
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
    /// namespace goes (all methods, all variants), and so does what is stored for a `Location` or
    /// `Content-Location` on the same origin.
    func invalidate(after context: RequestContext, response: HTTPTransportResponse) async {
        var urls: Set<String> = []
        if let url = URLNormalizer.normalize(context.url) { urls.insert(url) }
        for field in ["location", "content-location"] {
            guard let value = response.headers[field], let target = URL(string: value, relativeTo: context.url)?.absoluteURL,
                  target.scheme?.lowercased() == context.url.scheme?.lowercased(),
                  target.host?.lowercased() == context.url.host?.lowercased(), target.port == context.url.port,
                  let normalized = URLNormalizer.normalize(target) else { continue }
            urls.insert(normalized)
        }
        do {
            try await removeKeys { $0.namespace == context.namespace && urls.contains($0.url) }
        } catch {
            absorb(error)
        }
    }

    /// Removes every key the HTTP cache wrote that `predicate` selects.
    func removeKeys(where predicate: (CacheKey) -> Bool) async throws {
        for raw in storage.allKeys {
            guard let key = CacheKey(rawValue: raw), predicate(key) else { continue }
            try await storage.async.removeObject(forKey: raw)
        }
    }

    /// Reads a value; a missing one is nil, other failures (an undecodable entry, which Stash keeps until
    /// the next write replaces it, or a damaged one, which Stash drops) are reported and read as nil
    /// too, so a damaged store costs a network request, not an error.
    private func read<Value: Sendable>(_ view: Storage<Value>, _ key: String) async -> Value? {
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
