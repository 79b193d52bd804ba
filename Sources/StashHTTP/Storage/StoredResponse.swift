public import Foundation
public import Stash

/// One HTTP response as the cache keeps it: what the server sent, when it was asked and answered,
/// and which request header values selected it.
///
/// The storage entry itself never expires (`Expiry.never`): HTTP freshness is computed
/// from these fields on every read (RFC 9111 §4.2), and a stale response must stay available for
/// offline use until maintenance or the store's size limit removes it.
public struct StoredResponse: Sendable, Hashable, Codable {
    /// The request URL the response answers, as sent (before normalization for the key).
    public var url: URL
    /// The request method, upper-cased (`GET` or `HEAD`).
    public var method: String
    /// The namespace the response was stored in (environment, user…).
    public var namespace: String
    /// The status code.
    public var statusCode: Int
    /// The response header fields, updated by each 304 that revalidates the response.
    public var headers: HTTPHeaders
    /// The response body, exactly as received.
    public var body: Data
    /// When the request that produced (or last revalidated) the response was sent (`request_time`).
    public var requestTime: Date
    /// When that response was received (`response_time`).
    public var responseTime: Date
    /// The values of the request headers named by the response's `Vary` (lower-cased name → value;
    /// an absent header is absent here too).
    public var varyValues: [String: String]
    /// A freshness lifetime chosen by the caller (``HTTPRequestOptions/timeToLive``) that replaces the
    /// server's; nil when the server's headers decide.
    public var freshnessLifetimeOverride: TimeInterval?
    /// For an incomplete response (206, RFC 9111 §3.3): the byte ranges of the representation that
    /// ``body`` holds, one after the other. nil for a complete response.
    public var parts: PartialContent?

    /// Creates a stored response.
    /// - Parameters:
    ///   - url: The request URL.
    ///   - method: The request method.
    ///   - namespace: The namespace it belongs to.
    ///   - statusCode: The status code.
    ///   - headers: The response header fields.
    ///   - body: The response body.
    ///   - requestTime: When the request was sent.
    ///   - responseTime: When the response arrived.
    ///   - varyValues: The request header values named by `Vary`.
    ///   - freshnessLifetimeOverride: A caller-chosen freshness lifetime, or nil.
    ///   - parts: The ranges `body` holds when the response is incomplete; nil when it is complete.
    public init(url: URL, method: String, namespace: String, statusCode: Int, headers: HTTPHeaders, body: Data,
                requestTime: Date, responseTime: Date, varyValues: [String: String] = [:],
                freshnessLifetimeOverride: TimeInterval? = nil, parts: PartialContent? = nil) {
        self.url = url
        self.method = method.uppercased()
        self.namespace = namespace
        self.statusCode = statusCode
        self.headers = headers
        self.body = body
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varyValues = varyValues
        self.freshnessLifetimeOverride = freshnessLifetimeOverride
        self.parts = parts
    }

    /// The parsed `Cache-Control` of the response.
    var cacheControl: CacheControl { CacheControl(headers["cache-control"]) }

    /// The header names listed by `Vary`, lower-cased and sorted; `["*"]` for `Vary: *`.
    var varyNames: [String] { Self.varyNames(headers) }

    static func varyNames(_ headers: HTTPHeaders) -> [String] {
        Array(Set(headers.listMembers("vary").map { $0.lowercased() })).sorted()
    }
}

extension StoredResponse {
    /// Stores a response as a small JSON header followed by the raw body bytes, so that bodies are
    /// neither base64-inflated nor copied through a JSON encoder.
    ///
    /// Use it when you create the `Storage` yourself:
    /// ```swift
    /// let storage = try Storage<StoredResponse>(diskConfig: DiskConfig(name: "HTTP"),
    ///                                           transformer: StoredResponse.transformer)
    /// ```
    public static let transformer = Transformer<StoredResponse>(
        toData: { response in
            var metadata = response
            metadata.body = Data()
            let header = try JSONEncoder().encode(metadata)
            var data = Data(magic)
            withUnsafeBytes(of: UInt32(header.count).bigEndian) { data.append(contentsOf: $0) }
            data.append(header)
            data.append(response.body)
            return data
        },
        fromData: { data in
            let bytes = [UInt8](data.prefix(magic.count + 4))
            guard bytes.count == magic.count + 4, Array(bytes.prefix(magic.count)) == magic else {
                throw StoredResponseFormatError.notAStoredResponse
            }
            // Read as UInt32: folded into an `Int` of 32 bits (Apple Watch) a length past 2 GiB would be negative.
            let announced = bytes.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let start = data.startIndex + magic.count + 4
            guard let length = Int(exactly: announced), data.count - (magic.count + 4) >= length else {
                throw StoredResponseFormatError.truncated
            }
            var response = try JSONDecoder().decode(StoredResponse.self, from: data[start..<start + length])
            response.body = Data(data[(start + length)...])
            return response
        }
    )

    /// "SHR1": Stash HTTP response, format 1.
    private static let magic: [UInt8] = [0x53, 0x48, 0x52, 0x31]
}

/// Why stored bytes could not be read back as a ``StoredResponse``.
public enum StoredResponseFormatError: Error, Sendable {
    /// The bytes do not start with the stored-response signature.
    case notAStoredResponse
    /// The bytes end before the header they announce.
    case truncated
}
