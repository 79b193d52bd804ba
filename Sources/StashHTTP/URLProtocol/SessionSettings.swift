import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The settings of a session configuration that ``HTTPCacheURLProtocol`` keeps, captured by
/// `URLSessionConfiguration.cached(by:partition:)`.
///
/// A protocol is never told which session runs it, and the request it is given lacks what the
/// session would have added: on Linux the session's cache policy, timeout and additional header
/// fields; on Apple platforms the header fields and cookies. So they are captured here, in the
/// binding of the configuration's protocol class, and put into each request the way the session
/// would have (see `Docs/OfflineHTTP.md`, "Which session settings are kept").
struct SessionSettings: Sendable, Hashable {
    /// `httpAdditionalHeaders`, added to requests that lack them.
    var additionalHeaders: [String: String] = [:]
    /// `requestCachePolicy`, for requests that leave theirs at `.useProtocolCachePolicy`.
    var requestCachePolicy: URLRequest.CachePolicy = .useProtocolCachePolicy
    /// `timeoutIntervalForRequest`, for requests that leave theirs at the default 60 s.
    var timeoutIntervalForRequest: TimeInterval = SessionSettings.defaultTimeout
    /// `httpShouldSetCookies` and `httpCookieStorage`: the jar cookies are sent from and stored in.
    var cookieJar: CookieJar?
    /// `allowsCellularAccess`.
    var allowsCellularAccess = true
    /// How requests are kept apart from other sessions' and users'.
    var partitioning: HTTPCachePartitioning = .byCredentials

    /// `URLRequest`'s default timeout: a request that has it did not choose its own.
    static let defaultTimeout: TimeInterval = 60

    init() {}

    init(_ configuration: URLSessionConfiguration, partitioning: HTTPCachePartitioning) {
        for (name, value) in configuration.httpAdditionalHeaders ?? [:] {
            if let name = name as? String { additionalHeaders[name] = "\(value)" }
        }
        requestCachePolicy = configuration.requestCachePolicy
        timeoutIntervalForRequest = configuration.timeoutIntervalForRequest
        if configuration.httpShouldSetCookies, let storage = configuration.httpCookieStorage { cookieJar = CookieJar(storage) }
        allowsCellularAccess = configuration.allowsCellularAccess
        self.partitioning = partitioning
    }

    /// `request` as the session would have sent it: its additional header fields, cookies, cache
    /// policy, timeout and network access, each only where the request did not choose its own.
    func apply(to original: URLRequest) -> URLRequest {
        var request = original
        for (name, value) in additionalHeaders where request.value(forHTTPHeaderField: name) == nil {
            request.setValue(value, forHTTPHeaderField: name)
        }
        if let cookieJar, request.httpShouldHandleCookies, request.value(forHTTPHeaderField: "Cookie") == nil,
           let url = request.url, let cookie = cookieJar.requestField(for: url) {
            request.setValue(cookie, forHTTPHeaderField: "Cookie")
        }
        if request.cachePolicy == .useProtocolCachePolicy { request.cachePolicy = requestCachePolicy }
        if request.timeoutInterval == Self.defaultTimeout, let timeout = Self.usableTimeout(timeoutIntervalForRequest) {
            request.timeoutInterval = timeout
        }
        if !allowsCellularAccess { request.allowsCellularAccess = false }
        return request
    }

    /// A timeout the transport can use: positive and finite (swift-corelibs-foundation converts it
    /// to whole milliseconds with `Int(_:)`, which traps on infinity, NaN and values past `Int.max`),
    /// at most a year. nil: keep the request's.
    static func usableTimeout(_ value: TimeInterval) -> TimeInterval? {
        guard value.isFinite, value > 0 else { return nil }
        return min(value, 365 * 86_400)
    }

    /// Keeps the cookies a response from the server sets, as the session would have.
    func storeCookies(from response: CachedResponse, for request: URLRequest) {
        guard let cookieJar, request.httpShouldHandleCookies, case .network = response.source else { return }
        cookieJar.store(response.headers, from: response.url, mainDocumentURL: request.mainDocumentURL)
    }
}

/// A session's cookie storage, compared by identity.
struct CookieJar: @unchecked Sendable, Hashable {
    // @unchecked Sendable: HTTPCookieStorage is documented as safe to use from any thread.
    let storage: HTTPCookieStorage

    init(_ storage: HTTPCookieStorage) {
        self.storage = storage
    }

    static func == (first: CookieJar, second: CookieJar) -> Bool { first.storage === second.storage }

    func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(storage)) }

    /// The `Cookie` field value for `url`; nil when the jar has none for it.
    func requestField(for url: URL) -> String? {
        guard let cookies = storage.cookies(for: url), !cookies.isEmpty else { return nil }
        return HTTPCookie.requestHeaderFields(with: cookies)["Cookie"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Stores the cookies `headers` set (every `Set-Cookie` line, as the headers keep them joined).
    func store(_ headers: HTTPHeaders, from url: URL, mainDocumentURL: URL?) {
        guard let field = headers["set-cookie"] else { return }
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": field], for: url)
        if !cookies.isEmpty { storage.setCookies(cookies, for: url, mainDocumentURL: mainDocumentURL) }
    }
}
