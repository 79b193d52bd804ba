public import Foundation
public import Stash
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// An offline-first HTTP client: a transport in front of a `Storage` of responses, following
/// RFC 9111 as a private cache and RFC 5861's stale-on-error extensions.
///
/// ```swift
/// let cache = try HTTPCache(diskConfig: DiskConfig(name: "HTTP", maxSize: 50_000_000))
/// let response = try await cache.response(for: URLRequest(url: todosURL))
/// switch response.source {
/// case .network, .revalidated, .cache: show(try response.decode([Todo].self))
/// case .stale(let error): showOffline(try response.decode([Todo].self), age: response.age, error: error)
/// }
/// ```
/// Fresh stored responses are served without the network; stale ones are revalidated with
/// `If-None-Match` / `If-Modified-Since`; when the network fails (or answers 5xx) the stored
/// response is served, flagged ``ResponseSource/stale(because:)``. Storage entries never expire by
/// themselves: freshness is computed on every read, so old responses stay available offline
/// until maintenance (``removeResponses(_:)``, ``trim(toSize:)``) or the store's `maxSize` removes them.
public final class HTTPCache: Sendable {
    /// The store of responses (shared with any other view of the same store).
    public let storage: Storage<StoredResponse>
    /// Sends the requests.
    public let transport: any HTTPTransport
    /// How the cache behaves.
    public let configuration: HTTPCacheConfiguration
    /// The counters behind ``statistics``, shared with the parts of the cache that count.
    let counters: Locked<HTTPCacheStatistics>
    /// Concurrent identical requests share one exchange (held here too so tests can watch it).
    let coalescer: RequestCoalescer
    /// Exchanges that an invalidation may overtake (held here too so tests can watch them).
    let inFlight: InFlightExchanges
    /// The responses in `storage`: lookup, storing, invalidation and maintenance.
    let store: ResponseStore
    /// The exchanges with the server, and the `stale-while-revalidate` refreshes still running.
    let network: NetworkExchange
    /// Decides how each request is answered.
    let responder: Responder

    /// Creates a cache over a store you opened.
    /// - Parameters:
    ///   - storage: The store of responses; open it with ``StoredResponse/transformer`` and no expiry.
    ///     Other keys in it are left alone.
    ///   - transport: Sends requests; a ``URLSessionTransport`` without its own caching by default.
    ///   - configuration: How the cache behaves.
    ///   - now: The clock freshness is measured against (inject one in tests).
    public init(storage: Storage<StoredResponse>, transport: any HTTPTransport = URLSessionTransport(),
                configuration: HTTPCacheConfiguration = HTTPCacheConfiguration(),
                now: @escaping @Sendable () -> Date = { Date() }) {
        self.storage = storage
        self.transport = transport
        self.configuration = configuration
        let counters = Locked(HTTPCacheStatistics()), coalescer = RequestCoalescer(), inFlight = InFlightExchanges()
        self.counters = counters
        self.coalescer = coalescer
        self.inFlight = inFlight
        let rules = ServingRules(configuration: configuration, now: now, counters: counters)
        store = ResponseStore(storage: storage, configuration: configuration, counters: counters, inFlight: inFlight, coalescer: coalescer)
        network = NetworkExchange(store: store, transport: transport, rules: rules, coalescer: coalescer, inFlight: inFlight)
        responder = Responder(store: store, network: network, rules: rules)
    }

    /// Opens (creating if needed) a store of responses and a cache over it.
    /// - Parameters:
    ///   - diskConfig: Where the store lives and its size limit; its `expiry` is ignored (entries never
    ///     expire as storage entries, HTTP freshness decides).
    ///   - memoryConfig: The memory layer's limits.
    ///   - transport: Sends requests.
    ///   - configuration: How the cache behaves.
    ///   - now: The clock freshness is measured against.
    /// - Throws: ``HTTPCacheError/storage(underlying:)`` when the store cannot be opened.
    public convenience init(diskConfig: DiskConfig, memoryConfig: MemoryConfig = MemoryConfig(totalCostLimit: 10_000_000),
                            transport: any HTTPTransport = URLSessionTransport(),
                            configuration: HTTPCacheConfiguration = HTTPCacheConfiguration(),
                            now: @escaping @Sendable () -> Date = { Date() }) throws {
        var diskConfig = diskConfig
        diskConfig.expiry = .never
        do {
            let storage = try Storage(diskConfig: diskConfig, memoryConfig: memoryConfig,
                                      transformer: StoredResponse.transformer, now: now)
            self.init(storage: storage, transport: transport, configuration: configuration, now: now)
        } catch let error as StorageError {
            throw HTTPCacheError.storage(underlying: error)
        }
    }

    // MARK: Requests

    /// Answers `request` from the cache or the network, by the rules of `options`.
    ///
    /// GET and HEAD use the cache. Other methods go to the network; a successful unsafe request
    /// (POST, PUT, PATCH, DELETE…) removes what is stored for its URL, and for its `Location` and
    /// `Content-Location` on the same origin (RFC 9111 §4.4). A request carrying its own conditional
    /// headers (`If-None-Match`, `If-Modified-Since`…) or a `Range` is passed through untouched and its
    /// answer returned as is.
    /// - Parameters:
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    /// - Returns: The response, with its ``CachedResponse/source`` and age. An HTTP error status is a
    ///   response, not an error.
    /// - Throws: ``HTTPCacheError/network(underlying:)`` when the network failed and nothing stored
    ///   could stand in, ``HTTPCacheError/staleNotAllowed(underlying:)`` when something stored may not be
    ///   served stale, ``HTTPCacheError/notCached(_:)`` for ``HTTPCachePolicy/cacheOnly`` with nothing
    ///   stored, ``HTTPCacheError/invalidRequest(_:)``.
    public func response(for request: URLRequest, options: HTTPRequestOptions = HTTPRequestOptions()) async throws -> CachedResponse {
        try await responder.perform(request, options: options).response
    }

    /// Answers a GET of `url`; see ``response(for:options:)-(URLRequest,_)``.
    /// - Parameters:
    ///   - url: The URL to get.
    ///   - options: Policy, namespace and freshness overrides.
    /// - Returns: The response.
    /// - Throws: The errors of ``response(for:options:)-(URLRequest,_)``.
    public func response(for url: URL, options: HTTPRequestOptions = HTTPRequestOptions()) async throws -> CachedResponse {
        try await response(for: URLRequest(url: url), options: options)
    }

    /// Answers `request` and decodes its body.
    /// - Parameters:
    ///   - type: The type of the body.
    ///   - request: The request.
    ///   - options: Policy, namespace and freshness overrides.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    /// - Returns: The value and the response it came from (for its source and age).
    /// - Throws: The errors of ``response(for:options:)-(URLRequest,_)``, and
    ///   ``HTTPCacheError/decoding(underlying:)`` when the body does not decode.
    public func decoded<Value: Decodable & Sendable>(_ type: Value.Type, for request: URLRequest,
                                                     options: HTTPRequestOptions = HTTPRequestOptions(),
                                                     decoder: JSONDecoder = JSONDecoder()) async throws -> DecodedResponse<Value> {
        let response = try await response(for: request, options: options)
        return DecodedResponse(value: try response.decode(Value.self, using: decoder), response: response)
    }

    // MARK: Statistics

    /// Hits, misses, revalidations and stale responses served so far.
    public var statistics: HTTPCacheStatistics { counters.withLock { $0 } }

    /// Sets every counter back to zero.
    public func resetStatistics() {
        counters.withLock { $0 = HTTPCacheStatistics() }
    }

    // MARK: Reached by tests

    /// The request a redirect response leads to; see ``Responder/redirect(from:_:)``.
    static func redirect(from request: URLRequest, _ response: CachedResponse) -> URLRequest? {
        Responder.redirect(from: request, response)
    }

    /// The stored response a 304 freshens; see ``NetworkExchange/selectVariant(for:own:variants:)``.
    static func selectVariant(for notModified: HTTPTransportResponse, own stored: StoredResponse?,
                              variants: [StoredResponse]) -> StoredResponse? {
        NetworkExchange.selectVariant(for: notModified, own: stored, variants: variants)
    }
}
