import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One request as the cache sees it: method, namespace, options and the request's own directives.
struct RequestContext: Sendable {
    let request: URLRequest
    let url: URL
    let method: String
    let namespace: String
    let options: HTTPRequestOptions
    /// The request's `Cache-Control`, or `no-cache` for a lone `Pragma: no-cache` (RFC 9111 §5.4).
    let cacheControl: CacheControl

    /// Conditional and range fields: a request carrying one of them is the caller's own exchange.
    private static let passThroughFields = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since", "if-range", "range"]

    init(_ request: URLRequest, options: HTTPRequestOptions, defaultNamespace: String) throws {
        guard let url = request.url, URLNormalizer.normalize(url) != nil else {
            throw HTTPCacheError.invalidRequest("the request has no URL with a scheme")
        }
        self.request = request
        self.url = url
        method = (request.httpMethod ?? "GET").uppercased()
        namespace = options.namespace ?? defaultNamespace
        self.options = options
        if let field = request.value(forHTTPHeaderField: "Cache-Control") {
            cacheControl = CacheControl(field)
        } else if let pragma = request.value(forHTTPHeaderField: "Pragma"), pragma.lowercased().contains("no-cache") {
            cacheControl = CacheControl("no-cache")
        } else {
            cacheControl = CacheControl(nil)
        }
    }

    /// Whether the caller made the request conditional or partial itself, so it must reach the server
    /// as it is and its answer (a 304, a 206) goes back to the caller untouched.
    var isCallersOwnExchange: Bool {
        Self.passThroughFields.contains { request.value(forHTTPHeaderField: $0) != nil }
    }

    /// The policy in force: the options', with the request's `only-if-cached` read as ``HTTPCachePolicy/cacheOnly``.
    var policy: HTTPCachePolicy {
        if options.policy == .useProtocolRules, cacheControl.onlyIfCached { return .cacheOnly }
        return options.policy
    }
}

/// What the store holds for a request: the key its response lives under and the response, if any.
struct Lookup: Sendable {
    /// The key under which a response to this request is (or would be) stored.
    var key: CacheKey
    /// The `Vary` names recorded for the request's URL.
    var varyNames: [String]
    /// The stored response, nil on a miss.
    var stored: StoredResponse?
}
