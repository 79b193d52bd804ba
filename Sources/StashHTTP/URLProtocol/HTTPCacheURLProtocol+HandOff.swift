#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking

/// Tasks the protocol cannot answer on Linux, handed to Foundation's own HTTP protocol.
///
/// swift-corelibs-foundation asks a protocol class only about the request (`canInit(with:)`), never
/// about the task, so the protocol cannot decline by the kind of task. Two kinds it cannot answer:
///
/// - a **download task**: the loading system delivers the file only from a property its own
///   protocol sets (a custom protocol's download completes with no file and no error);
/// - an **upload task** (`upload(for:from:)`): the body lives in the task, and the request the
///   protocol is given has none.
///
/// Such a task is loaded by an instance of Foundation's protocol for the same task, as if the
/// protocol had declined it; its calls pass through a ``ForwardingClient``, which, for an unsafe
/// method that succeeded, invalidates the URL in the cache before the task completes (RFC 9111 §4.4).
extension HTTPCacheURLProtocol {
    /// Starts Foundation's protocol for this task when the cache cannot answer it; false otherwise.
    func handOffToFoundation(_ binding: URLProtocolBindings.Binding) -> Bool {
        let bodyHidden = request.httpBody == nil && request.httpBodyStream == nil
        guard let task, task is URLSessionDownloadTask || (task is URLSessionUploadTask && bodyHidden),
              let foundationClass = Self.foundationProtocolClass(for: request) else { return false }
        let forwarding = ForwardingClient(client, cache: binding.cache, request: request)
        let foundation = foundationClass.init(task: task, cachedResponse: nil, client: forwarding)
        handedOff.withLock { $0 = foundation }
        foundation.startLoading()
        return true
    }

    /// The first of Foundation's default protocol classes that takes `request` (its HTTP protocol).
    private static func foundationProtocolClass(for request: URLRequest) -> URLProtocol.Type? {
        for candidate in URLSessionConfiguration.default.protocolClasses ?? [] {
            guard let type = candidate as? URLProtocol.Type, !(type is HTTPCacheURLProtocol.Type),
                  type.canInit(with: request) else { continue }
            return type
        }
        return nil
    }
}

/// Passes Foundation's protocol's calls on to the task's client unchanged (with Foundation's
/// protocol as the sender, whose properties the client reads when the task completes), and
/// invalidates the URL of a successful unsafe request before passing on its completion, so that a
/// request made after the task completed never gets the response stored before it.
private final class ForwardingClient: NSObject, URLProtocolClient, @unchecked Sendable {
    // @unchecked Sendable: every property is set once. The loading system calls the client from its
    // own queue.
    private let client: (any URLProtocolClient)?
    private let cache: HTTPCache
    private let request: URLRequest

    init(_ client: (any URLProtocolClient)?, cache: HTTPCache, request: URLRequest) {
        self.client = client
        self.cache = cache
        self.request = request
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy) {
        client?.urlProtocol(`protocol`, didReceive: response, cacheStoragePolicy: policy)
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        // The task's response, not `didReceive`'s: Foundation reports it there only to delegates.
        if let http = `protocol`.task?.response as? HTTPURLResponse {
            cache.store.invalidateSynchronously(after: request, response: HTTPTransportResponse(statusCode: http.statusCode, headers: HTTPHeaders(http)))
        }
        client?.urlProtocolDidFinishLoading(`protocol`)
    }

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {
        client?.urlProtocol(`protocol`, wasRedirectedTo: request, redirectResponse: redirectResponse)
    }

    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {
        client?.urlProtocol(`protocol`, cachedResponseIsValid: cachedResponse)
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        client?.urlProtocol(`protocol`, didLoad: data)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: any Error) {
        client?.urlProtocol(`protocol`, didFailWithError: error)
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        client?.urlProtocol(`protocol`, didReceive: challenge)
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {
        client?.urlProtocol(`protocol`, didCancel: challenge)
    }
}
#endif
