import Foundation
import Stash
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The cache's responses in its `Storage`: finding the one that answers a request (its `Vary`
/// variant, RFC 9111 §4.1), storing and removing them, invalidating them, and the maintenance
/// ``HTTPCache`` offers.
///
/// Its reads and writes never fail a request: a store that fails costs a network request, and the
/// failure is counted and reported to ``HTTPCacheConfiguration/storageErrorHandler`` (see ``absorb(_:)``).
struct ResponseStore: Sendable {
    /// The store of responses (shared with any other view of the same store).
    let storage: Storage<StoredResponse>
    /// The `Vary` names per (namespace, method, URL): a view of the same store.
    let varyIndex: Storage<VaryRecord>
    /// How the cache behaves: its default namespace, and where storage failures are reported.
    let configuration: HTTPCacheConfiguration
    /// The counters behind ``HTTPCache/statistics`` (storage failures are counted here).
    let counters: Locked<HTTPCacheStatistics>
    /// Exchanges that an invalidation may overtake.
    let inFlight: InFlightExchanges
    /// Concurrent identical requests share one exchange; an invalidation detaches them.
    let coalescer: RequestCoalescer

    init(storage: Storage<StoredResponse>, configuration: HTTPCacheConfiguration, counters: Locked<HTTPCacheStatistics>,
         inFlight: InFlightExchanges, coalescer: RequestCoalescer) {
        self.storage = storage
        self.configuration = configuration
        self.counters = counters
        self.inFlight = inFlight
        self.coalescer = coalescer
        varyIndex = storage.transformCodable(ofType: VaryRecord.self)
    }

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

    /// The stored GET response for the same URL, namespace and variant as a HEAD request, with the
    /// context of that GET (RFC 9111 §4.3.5).
    func storedGET(for head: RequestContext) async throws -> (RequestContext, Lookup) {
        var request = head.request
        request.httpMethod = "GET"
        let get = try RequestContext(request, options: head.options, defaultNamespace: head.namespace)
        return (get, await lookup(get))
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

    /// Counts and reports a storage failure the cache absorbs instead of failing the request.
    func absorb(_ error: any Error) {
        counters.withLock { $0.storageFailures += 1 }
        let storageError = (error as? StorageError) ?? StorageError.io(operation: "store", path: storage.path, underlying: error)
        configuration.storageErrorHandler?(.storage(underlying: storageError))
    }
}

/// The `Vary` header names of the responses stored for one (namespace, method, URL).
struct VaryRecord: Codable, Sendable, Equatable {
    var names: [String]
}
