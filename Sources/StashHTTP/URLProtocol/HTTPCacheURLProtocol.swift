#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// A `URLProtocol` that answers a session's requests through an ``HTTPCache``, so that code written
/// against `URLSession` (your own, a library's, a generated API client's) gets the offline cache
/// without changing a call site.
///
/// You do not list this class yourself: `URLSessionConfiguration.cached(by:)` puts a
/// subclass bound to your cache into the configuration's `protocolClasses`.
///
/// ```swift
/// let session = URLSession(configuration: .default.cached(by: cache))
/// let (data, response) = try await session.data(from: todosURL)
/// if let status = (response as? HTTPURLResponse)?.cacheStatus, status.source == .stale {
///     showOffline(data, age: status.age, reason: status.staleReason)
/// }
/// ```
///
/// - GET and HEAD go through the cache, with the policy `URLRequest.cachePolicy` maps to
///   (``HTTPCachePolicy/init(_:)``). Other methods go to the network through the cache's transport,
///   which removes what is stored for the URL when they succeed (RFC 9111 §4.4).
/// - Every response carries a `Stash-Cache` header field: ``HTTPCacheStatus``.
/// - When the network fails and nothing stored may stand in, the task fails with the original
///   `URLError`; `.returnCacheDataDontLoad` with nothing stored fails with `URLError(.resourceUnavailable)`.
/// - The requests the protocol sends through the cache's transport are tagged with
///   `URLProtocol.setProperty(_:forKey:in:)`, so a transport session that lists this protocol too
///   does not loop back into it (on Apple platforms; swift-corelibs-foundation drops the properties
///   of a request, so on Linux never register the bound classes with `URLProtocol.registerClass(_:)`).
/// - Redirects are followed by the cache's transport (a `URLSessionTransport` follows them as
///   `URLSession` does); the session's own redirect and authentication delegate methods are not
///   consulted. See `Docs/OfflineHTTP.md` for these and the other differences.
public class HTTPCacheURLProtocol: URLProtocol {
    // Not Sendable (URLProtocol is not): the task that loads reaches the protocol only through a
    // `Delivery`, which locks.

    /// The `URLProtocol` property that marks requests the protocol sends itself.
    static let innerRequestKey = "StashHTTP.HTTPCacheURLProtocol.inner"

    private let delivery = LockedBox<Delivery?>(nil)

    /// Stops serving `cache` through every session configuration made for it by
    /// `URLSessionConfiguration.cached(by:)`: their requests go straight to the network
    /// from then on, and the cache can be deallocated once nothing else holds it.
    /// - Parameter cache: The cache to let go of.
    public static func unbind(_ cache: HTTPCache) {
        URLProtocolBindings.shared.unbind(cache)
    }

    /// Whether the protocol takes `request`: an http(s) request of a session bound to a cache,
    /// that the protocol did not send itself.
    override public class func canInit(with request: URLRequest) -> Bool {
        guard URLProtocolBindings.shared.binding(for: self) != nil,
              URLProtocol.property(forKey: innerRequestKey, in: request) == nil,
              let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return !Self.hidesItsBody(request)
    }

    /// The request unchanged: the cache computes its own keys.
    override public class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Requests are equivalent when they are equal (Foundation's cache is not used).
    override public class func requestIsCacheEquivalent(_ first: URLRequest, to second: URLRequest) -> Bool {
        first == second
    }

    /// Asks the cache for the response, in a task, and hands it to the client.
    override public func startLoading() {
        let delivery = Delivery(self, client: client)
        self.delivery.withLock { $0 = delivery }
        guard let binding = URLProtocolBindings.shared.binding(for: type(of: self)) else {
            // Unbound (``unbind(_:)``) between canInit and now: there is no cache to ask.
            delivery.fail(URLError(.cancelled))
            return
        }
        let prepared = Self.prepare(request, additionalHeaders: binding.additionalHeaders)
        let request = prepared.request, options = prepared.options, cache = binding.cache
        delivery.start(Task {
            do {
                let response = try await cache.response(for: request, options: options)
                delivery.deliver(response, for: request)
            } catch {
                delivery.fail(HTTPCacheURLProtocol.urlError(for: error))
            }
        })
    }

    /// Cancels the cache's work; nothing reaches the client after this.
    override public func stopLoading() {
        delivery.withLock { $0 }?.stop()
    }

    // MARK: Requests and errors

    /// The request the cache sends: tagged, with the session's additional header fields it lacks,
    /// the body read from its stream, and the options its cache policy maps to.
    static func prepare(_ original: URLRequest, additionalHeaders: [String: String]) -> (request: URLRequest, options: HTTPRequestOptions) {
        var request = original
        for (name, value) in additionalHeaders where request.value(forHTTPHeaderField: name) == nil {
            request.setValue(value, forHTTPHeaderField: name)
        }
        if request.httpBody == nil, let stream = request.httpBodyStream {
            request.httpBodyStream = nil
            request.httpBody = read(stream)
        }
        if request.cachePolicy == .reloadIgnoringLocalAndRemoteCacheData, request.value(forHTTPHeaderField: "Cache-Control") == nil {
            // Foundation leaves this policy unimplemented; asking intermediaries too is what it promises.
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        }
        let options = HTTPRequestOptions(policy: HTTPCachePolicy(request.cachePolicy))
        if let mutable = (request as NSURLRequest).mutableCopy() as? NSMutableURLRequest {
            URLProtocol.setProperty(true, forKey: innerRequestKey, in: mutable)
            request = mutable as URLRequest
        }
        return (request, options)
    }

    /// Whether the request has a body the protocol cannot see. swift-corelibs-foundation gives a
    /// protocol only the task's request, without the body of an upload task (`upload(for:from:)`):
    /// such requests are left to the built-in HTTP protocol, which sends them whole.
    static func hidesItsBody(_ request: URLRequest) -> Bool {
        #if canImport(FoundationNetworking)
        let method = (request.httpMethod ?? "GET").uppercased()
        return ["POST", "PUT", "PATCH"].contains(method) && request.httpBody == nil && request.httpBodyStream == nil
        #else
        return false
        #endif
    }

    private static func read(_ stream: InputStream) -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        stream.open()
        defer { stream.close() }
        while true {
            let count = stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return data
    }

    /// What the client sees for a failure: the original `URLError` when the network failed (and nothing
    /// stored could stand in), `resourceUnavailable` for a cache-only miss, and otherwise a `URLError`
    /// whose underlying error is the ``HTTPCacheError``.
    static func urlError(for error: any Error) -> any Error {
        switch error {
        case HTTPCacheError.network(let underlying), HTTPCacheError.staleNotAllowed(let underlying):
            if underlying is URLError { return underlying }
            return URLError(.cannotLoadFromNetwork, userInfo: [NSUnderlyingErrorKey: underlying])
        case HTTPCacheError.notCached:
            return URLError(.resourceUnavailable, userInfo: [NSUnderlyingErrorKey: error])
        case HTTPCacheError.invalidRequest:
            return URLError(.badURL, userInfo: [NSUnderlyingErrorKey: error])
        case is CancellationError:
            return URLError(.cancelled)
        default:
            return URLError(.unknown, userInfo: [NSUnderlyingErrorKey: error])
        }
    }
}
