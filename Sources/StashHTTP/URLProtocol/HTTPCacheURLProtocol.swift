#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif
import Stash

/// A `URLProtocol` that answers a session's requests through an ``HTTPCache``, so that code written
/// against `URLSession` (your own, a library's, a generated API client's) gets the offline cache
/// without changing a call site.
///
/// You do not list this class yourself: `URLSessionConfiguration.cached(by:partition:)` puts a
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
/// - GET and HEAD go through the cache, with the policy `URLRequest.cachePolicy` (or, when the
///   request has the default, the session's `requestCachePolicy`) maps to (``HTTPCachePolicy/init(_:)``),
///   in the partition the session chose (``HTTPCachePartitioning``). Other methods go to the network
///   through the cache's transport, which removes what is stored for the URL when they succeed
///   (RFC 9111 §4.4).
/// - The session's additional header fields, cookies, request timeout and cellular setting are
///   applied as the session would (`URLSessionConfiguration.cached(by:partition:)`).
/// - On Linux, download tasks and upload tasks (whose body a protocol is not shown) are loaded by
///   Foundation's own HTTP protocol on this one's behalf; an upload still invalidates.
/// - Every response carries a `Stash-Cache` header field: ``HTTPCacheStatus``.
/// - When the network fails and nothing stored may stand in, the task fails with the original
///   `URLError`; `.returnCacheDataDontLoad` with nothing stored fails with `URLError(.resourceUnavailable)`.
/// - The requests the protocol sends through the cache's transport are tagged with
///   `URLProtocol.setProperty(_:forKey:in:)`, so a transport session that lists this protocol too
///   does not loop back into it (on Apple platforms; swift-corelibs-foundation drops the properties
///   of a request, so on Linux never register the bound classes with `URLProtocol.registerClass(_:)`).
/// - Redirects are followed by the cache (each hop cached by its own rules); the session's own
///   redirect and authentication delegate methods are not consulted. See `Docs/OfflineHTTP.md` for
///   these and the other differences.
/// - Unavailable on watchOS, which does not run custom `URLProtocol` classes (see `Docs/Platforms.md`).
@available(watchOS, unavailable, message: "watchOS does not load custom URLProtocol classes: call HTTPCache.response(for:) directly")
public class HTTPCacheURLProtocol: URLProtocol {
    // Not Sendable (URLProtocol is not): the task that loads reaches the protocol only through a
    // `Delivery`, which locks.

    /// The `URLProtocol` property that marks requests the protocol sends itself.
    static let innerRequestKey = "StashHTTP.HTTPCacheURLProtocol.inner"

    private let delivery = Locked<Delivery?>(nil)
    #if canImport(FoundationNetworking)
    /// Foundation's own protocol, loading a task this one cannot answer (see ``handOffToFoundation(_:)``).
    let handedOff = Locked<URLProtocol?>(nil)
    #endif

    /// Stops serving `cache` through every session configuration made for it by
    /// `URLSessionConfiguration.cached(by:partition:)`: their requests go straight to the network
    /// from then on, and the cache can be deallocated once nothing else holds it.
    /// - Parameter cache: The cache to let go of.
    public static func unbind(_ cache: HTTPCache) {
        URLProtocolBindings.shared.unbind(cache)
    }

    /// Whether the protocol takes `request`: an http(s) request of a session bound to a cache,
    /// that the protocol did not send itself. (On Linux it also takes the tasks it cannot answer,
    /// download tasks and upload tasks whose body it is not shown, because the loading system asks
    /// only about the request; it hands them to Foundation's own HTTP protocol in ``startLoading()``.)
    override public class func canInit(with request: URLRequest) -> Bool {
        guard URLProtocolBindings.shared.binding(for: self) != nil,
              URLProtocol.property(forKey: innerRequestKey, in: request) == nil,
              let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return true
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
        #if canImport(FoundationNetworking)
        if handOffToFoundation(binding) { return }
        #endif
        let original = request
        let prepared = Self.prepare(original, settings: binding.settings)
        let request = prepared.request, options = prepared.options, cache = binding.cache, settings = binding.settings
        delivery.start(Task {
            do {
                let response = try await cache.response(for: request, options: options)
                settings.storeCookies(from: response, for: original)
                delivery.deliver(response, for: request)
            } catch {
                delivery.fail(HTTPCacheURLProtocol.urlError(for: error))
            }
        })
    }

    /// Cancels the cache's work; nothing reaches the client after this.
    override public func stopLoading() {
        delivery.withLock { $0 }?.stop()
        #if canImport(FoundationNetworking)
        handedOff.withLock { $0 }?.stopLoading()
        #endif
    }

    // MARK: Requests and errors

    /// The request the cache sends: tagged, with the session's settings applied where the request
    /// has none of its own (``SessionSettings/apply(to:)``), the body read from its stream, and the
    /// options its cache policy and the session's partitioning map to.
    static func prepare(_ original: URLRequest, settings: SessionSettings) -> (request: URLRequest, options: HTTPRequestOptions) {
        var request = settings.apply(to: original)
        if request.httpBody == nil, let stream = request.httpBodyStream {
            request.httpBodyStream = nil
            request.httpBody = read(stream)
        }
        if request.cachePolicy == .reloadIgnoringLocalAndRemoteCacheData, request.value(forHTTPHeaderField: "Cache-Control") == nil {
            // Foundation leaves this policy unimplemented; asking intermediaries too is what it promises.
            request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        }
        let options = HTTPRequestOptions(policy: HTTPCachePolicy(request.cachePolicy),
                                         partition: settings.partitioning.partition(for: request))
        // The session's cookies are in the request now; the transport's session must neither add
        // its own nor keep the ones the response sets (on Apple platforms; see URLSessionTransport).
        request.httpShouldHandleCookies = false
        if let mutable = (request as NSURLRequest).mutableCopy() as? NSMutableURLRequest {
            URLProtocol.setProperty(true, forKey: innerRequestKey, in: mutable)
            request = mutable as URLRequest
        }
        // Set again after the copy: swift-corelibs-foundation lets a request's timeout override the
        // session's only when it was set on that very `URLRequest` value, and the copy forgets it.
        request.timeoutInterval = request.timeoutInterval
        return (request, options)
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
