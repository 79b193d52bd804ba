public import Foundation

/// Where a response came from.
public enum ResponseSource: Sendable, CustomStringConvertible {
    /// Loaded from the network (no usable stored response, or the server sent a new one).
    case network
    /// A fresh stored response; the network was not asked.
    case cache
    /// A stored response the server confirmed unchanged with 304 Not Modified.
    case revalidated
    /// A stored response served without a successful exchange with the server: `because` is the
    /// network error (a `URLError`), ``HTTPCacheError/serverError(statusCode:)`` for a 5xx, or
    /// ``HTTPCacheError/staleAccepted`` / ``HTTPCacheError/revalidationInProgress`` when the request's
    /// policy chose it. Usually stale; ``CachedResponse/isFresh`` tells.
    case stale(because: any Error)

    /// The error of a ``stale(because:)`` source; nil for the others.
    public var staleReason: (any Error)? {
        if case .stale(let error) = self { return error }
        return nil
    }

    /// Whether the body came from the store (every source but ``network``).
    public var isFromCache: Bool {
        if case .network = self { return false }
        return true
    }

    /// The source in words, for logs: "network", "cache", "revalidated" or "stale (reason)".
    public var description: String {
        switch self {
        case .network: return "network"
        case .cache: return "cache"
        case .revalidated: return "revalidated"
        case .stale(let error): return "stale (\(error))"
        }
    }
}

/// An HTTP response as the cache hands it out: the server's status, headers and body, where it came
/// from, and how old it is.
///
/// ```swift
/// let response = try await cache.response(for: URLRequest(url: url))
/// if case .stale(let error) = response.source {
///     print("offline (\(error)), showing data from \(Int(response.age / 60)) minutes ago")
/// }
/// let todos = try response.decode([Todo].self)
/// ```
public struct CachedResponse: Sendable {
    /// Where it came from.
    public let source: ResponseSource
    /// The request URL it answers.
    public let url: URL
    /// The status code (the stored one for a 304-revalidated response).
    public let statusCode: Int
    /// The header fields (for a revalidated response, updated with the 304's fields).
    public let headers: HTTPHeaders
    /// The body.
    public let body: Data
    /// The response's age when served (RFC 9111 §4.2.3 `current_age`): 0 or close to it for a
    /// network response, the time since the server generated it for a stored one.
    public let age: TimeInterval
    /// How long the response is fresh after it was generated (RFC 9111 §4.2.1, or the request's
    /// time to live); 0 when the server gave no freshness.
    public let freshnessLifetime: TimeInterval
    /// When it was served.
    public let servedAt: Date

    /// Creates a response (the cache makes them; public for test doubles of code that consumes them).
    /// - Parameters:
    ///   - source: Where it came from.
    ///   - url: The request URL.
    ///   - statusCode: The status code.
    ///   - headers: The header fields.
    ///   - body: The body.
    ///   - age: The age when served.
    ///   - freshnessLifetime: The freshness lifetime.
    ///   - servedAt: When it was served.
    public init(source: ResponseSource, url: URL, statusCode: Int, headers: HTTPHeaders, body: Data,
                age: TimeInterval, freshnessLifetime: TimeInterval, servedAt: Date) {
        self.source = source
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.age = age
        self.freshnessLifetime = freshnessLifetime
        self.servedAt = servedAt
    }

    /// Whether the response was still fresh when served.
    public var isFresh: Bool { freshnessLifetime > age }

    /// When the response stops (or stopped) being fresh.
    public var expiresAt: Date { servedAt.addingTimeInterval(freshnessLifetime - age) }

    /// When the server generated the response (now minus its age).
    public var generatedAt: Date { servedAt.addingTimeInterval(-age) }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(statusCode) }

    /// Decodes the body.
    /// - Parameters:
    ///   - type: The type to decode.
    ///   - decoder: The decoder; a default `JSONDecoder` when omitted.
    /// - Returns: The decoded value.
    /// - Throws: ``HTTPCacheError/decoding(underlying:)`` with the decoder's error.
    public func decode<Value: Decodable>(_ type: Value.Type, using decoder: JSONDecoder = JSONDecoder()) throws -> Value {
        do {
            return try decoder.decode(Value.self, from: body)
        } catch {
            throw HTTPCacheError.decoding(underlying: error)
        }
    }
}

/// A decoded body together with the response it came from (its source and age).
public struct DecodedResponse<Value: Sendable>: Sendable {
    /// The decoded body.
    public let value: Value
    /// The response, for its ``CachedResponse/source`` and ``CachedResponse/age``.
    public let response: CachedResponse

    /// Pairs a value with its response.
    /// - Parameters:
    ///   - value: The decoded body.
    ///   - response: The response it was decoded from.
    public init(value: Value, response: CachedResponse) {
        self.value = value
        self.response = response
    }
}
