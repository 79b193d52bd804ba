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
    /// The partition of the namespace (``HTTPRequestOptions/partition``).
    var partition: String { options.partition }
    let options: HTTPRequestOptions
    /// The request's `Cache-Control`, or `no-cache` for a lone `Pragma: no-cache` (RFC 9111 §5.4).
    let cacheControl: CacheControl

    /// The single byte range of a GET's `Range` field, when the cache can answer it (RFC 9111 §3.3–3.4).
    let byteRange: ByteRangeSpec?

    /// Conditional fields: a request carrying one of them is the caller's own exchange.
    private static let conditionalFields = ["if-none-match", "if-modified-since", "if-match", "if-unmodified-since"]

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
        let range = request.value(forHTTPHeaderField: "Range")
        byteRange = method == "GET" ? range.flatMap(ByteRangeSpec.init(rangeField:)) : nil
    }

    /// Whether the caller made the request conditional itself, or asked for ranges the cache does not
    /// answer (several ranges, another unit), so it must reach the server as it is and its answer (a
    /// 304, a 206) goes back to the caller untouched.
    var isCallersOwnExchange: Bool {
        if Self.conditionalFields.contains(where: { request.value(forHTTPHeaderField: $0) != nil }) { return true }
        let asksForRange = request.value(forHTTPHeaderField: "Range") != nil || request.value(forHTTPHeaderField: "If-Range") != nil
        return asksForRange && (byteRange == nil || method != "GET")
    }

    /// The request's `If-Range` field (RFC 9110 §13.1.5).
    var ifRange: String? { request.value(forHTTPHeaderField: "If-Range") }

    /// The same request without its own `Range` and `If-Range`: for the whole representation.
    var requestWithoutRange: URLRequest {
        var whole = request
        whole.setValue(nil, forHTTPHeaderField: "Range")
        whole.setValue(nil, forHTTPHeaderField: "If-Range")
        return whole
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
    /// The stored complete response, nil on a miss.
    var stored: StoredResponse?
    /// The stored incomplete (206) response, which only answers ranges it holds (RFC 9111 §3.3).
    var partial: StoredResponse?
}
