public import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How an ``HTTPCache`` behaves for every request (per-request choices are ``HTTPRequestOptions``).
public struct HTTPCacheConfiguration: Sendable {
    /// The namespace of requests that name none: keeps one environment's or one user's responses
    /// apart from another's. Default: empty.
    public var namespace: String
    /// How a freshness lifetime is guessed when the server sends no explicit one.
    public var heuristics: HeuristicFreshness
    /// Whether a 5xx answer to a request counts as a failure that a stored response may cover
    /// (as a connection error does). Default: true.
    public var servesStaleOnServerError: Bool
    /// The most staleness a response may have to be served when the network fails; nil (the
    /// default) serves any stored response, however old. A `stale-if-error` directive extends it.
    public var maxStalenessOnError: TimeInterval?
    /// Whether a response marked `must-revalidate` or `no-cache` may still be served stale when the
    /// network fails. RFC 9111 §4.2.4 forbids it; an offline-first app may prefer old data to none.
    /// Default: false.
    public var servesStaleDespiteMustRevalidate: Bool
    /// Whether `stale-while-revalidate` (RFC 5861 §3) is honoured: within its window a stale response
    /// is returned at once and refreshed in the background. Default: true.
    public var honoursStaleWhileRevalidate: Bool
    /// Which transport errors mean "offline" and so allow serving a stored response. Default:
    /// ``isConnectionError(_:)``.
    public var isOfflineError: @Sendable (any Error) -> Bool
    /// Whether the cache follows redirects itself (301, 302, 303, 307, 308), caching each hop by its
    /// own rules so that a permanent redirect is followed from the store. Default: true. With false,
    /// a redirect the transport hands over is returned as it is.
    public var followsRedirects: Bool = true
    /// Called with every storage failure the cache absorbs (a response that could not be written or
    /// read); the request itself still succeeds from the network. Default: nil.
    public var storageErrorHandler: (@Sendable (HTTPCacheError) -> Void)?

    /// Creates a configuration.
    /// - Parameters:
    ///   - namespace: The default namespace.
    ///   - heuristics: Heuristic freshness settings.
    ///   - servesStaleOnServerError: Whether a 5xx lets a stored response be served.
    ///   - maxStalenessOnError: The staleness limit when offline; nil = none.
    ///   - servesStaleDespiteMustRevalidate: Whether `must-revalidate`/`no-cache` responses are served stale offline.
    ///   - honoursStaleWhileRevalidate: Whether `stale-while-revalidate` is honoured.
    ///   - isOfflineError: Which transport errors allow serving a stored response.
    ///   - storageErrorHandler: Receives storage failures the cache absorbs.
    public init(namespace: String = "",
                heuristics: HeuristicFreshness = HeuristicFreshness(),
                servesStaleOnServerError: Bool = true,
                maxStalenessOnError: TimeInterval? = nil,
                servesStaleDespiteMustRevalidate: Bool = false,
                honoursStaleWhileRevalidate: Bool = true,
                isOfflineError: @escaping @Sendable (any Error) -> Bool = HTTPCacheConfiguration.isConnectionError,
                storageErrorHandler: (@Sendable (HTTPCacheError) -> Void)? = nil) {
        self.namespace = namespace
        self.heuristics = heuristics
        self.servesStaleOnServerError = servesStaleOnServerError
        self.maxStalenessOnError = maxStalenessOnError
        self.servesStaleDespiteMustRevalidate = servesStaleDespiteMustRevalidate
        self.honoursStaleWhileRevalidate = honoursStaleWhileRevalidate
        self.isOfflineError = isOfflineError
        self.storageErrorHandler = storageErrorHandler
    }

    /// The `URLError` codes that mean the server could not be reached or gave no usable answer.
    ///
    /// The same failure has different codes per platform, so both are listed (Docs/OfflineHTTP.md has
    /// the table): a connection closed without a reply is `badServerResponse` ("Empty reply from
    /// server") on Linux and `networkConnectionLost` on Apple platforms; a reset is
    /// `networkConnectionLost` on both; a refused connection or no route `cannotConnectToHost`; a name
    /// that does not resolve `cannotFindHost` (or `dnsLookupFailed`). A reply that cannot be read as
    /// HTTP (`cannotParseResponse`) is no answer either.
    public static let connectionErrorCodes: Set<URLError.Code> = [
        .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
        .networkConnectionLost, .timedOut, .internationalRoamingOff, .dataNotAllowed,
        .callIsActive, .secureConnectionFailed, .cannotLoadFromNetwork,
        .badServerResponse, .cannotParseResponse,
    ]

    /// The POSIX errors a custom transport (sockets of its own) reports for the same failures.
    public static let connectionErrorPOSIXCodes: Set<POSIXErrorCode> = [
        .ECONNREFUSED, .ECONNRESET, .ECONNABORTED, .EPIPE, .ENOTCONN, .ETIMEDOUT,
        .EHOSTUNREACH, .EHOSTDOWN, .ENETUNREACH, .ENETDOWN, .ENETRESET,
    ]

    /// Whether `error` means the server could not be reached or did not answer: a `URLError` with
    /// one of ``connectionErrorCodes``, or a `POSIXError` with one of ``connectionErrorPOSIXCodes``
    /// (also when wrapped as an `NSError`'s underlying error).
    /// - Parameter error: A transport's error.
    /// - Returns: true for connection failures, false for cancellation and everything else.
    @Sendable public static func isConnectionError(_ error: any Error) -> Bool {
        if let urlError = error as? URLError { return connectionErrorCodes.contains(urlError.code) }
        if let posix = error as? POSIXError { return connectionErrorPOSIXCodes.contains(posix.code) }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(truncatingIfNeeded: nsError.code)) {
            return connectionErrorPOSIXCodes.contains(code)
        }
        return false
    }
}

/// Heuristic freshness (RFC 9111 §4.2.2): for a response without `max-age` or `Expires` but with
/// `Last-Modified`, a fraction of the time since the last modification.
public struct HeuristicFreshness: Sendable, Hashable {
    /// The fraction of the time since `Last-Modified`; 0 disables heuristics. Default 0.1, as the RFC suggests.
    public var fraction: Double
    /// The longest lifetime a heuristic may give. Default: one day.
    public var maximumLifetime: TimeInterval
    /// Whether URLs with a query get heuristic freshness (older caches never gave it, as such URLs
    /// were often dynamic). Default: false.
    public var appliesToURLsWithQuery: Bool

    /// Creates heuristic settings.
    /// - Parameters:
    ///   - fraction: The fraction of the time since `Last-Modified`; 0 disables heuristics.
    ///   - maximumLifetime: The cap on the heuristic lifetime.
    ///   - appliesToURLsWithQuery: Whether URLs with a query get heuristic freshness.
    public init(fraction: Double = 0.1, maximumLifetime: TimeInterval = 86_400, appliesToURLsWithQuery: Bool = false) {
        self.fraction = max(0, fraction)
        self.maximumLifetime = max(0, maximumLifetime)
        self.appliesToURLsWithQuery = appliesToURLsWithQuery
    }

    /// No heuristic freshness: responses without explicit freshness are stale at once.
    public static let disabled = HeuristicFreshness(fraction: 0)
}
