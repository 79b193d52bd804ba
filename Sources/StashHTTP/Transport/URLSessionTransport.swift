#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif
import Stash

/// An ``HTTPTransport`` over a `URLSession` that never caches and never follows redirects by itself.
///
/// The session gets `urlCache = nil` and `requestCachePolicy = .reloadIgnoringLocalCacheData`: on
/// Linux `URLCache` keys entries by host, port and path only (a stored `?page=1` would answer
/// `?page=2`, a POST or https), and on Apple platforms its own revalidation would hide the 304s that
/// the ``HTTPCache`` needs to see. Its delegate declines redirects (on Linux and Apple platforms
/// alike, also for tasks with a completion handler), so the redirect response itself is returned and
/// the ``HTTPCache`` follows it, storing permanent ones.
///
/// The session has no cookie storage either (`httpShouldSetCookies = false`): one transport serves
/// every user of its cache, and a jar of its own would send one user's cookies with another's
/// requests (on Linux it would even replace the `Cookie` field a request carries). Cookies belong to
/// the caller: put them on the request, or use a session set up with
/// `URLSessionConfiguration.cached(by:partition:)`, which sends and keeps them in that
/// session's cookie storage.
public final class URLSessionTransport: HTTPTransport {
    /// The session requests are sent with.
    public let session: URLSession

    /// Creates a transport with its own session.
    /// - Parameters:
    ///   - configuration: The session configuration to start from (for example with
    ///     `protocolClasses` or timeouts of your own); its cache and cookie settings are overridden as
    ///     described above.
    ///   - followsRedirects: Whether the session follows redirects itself (then the cache never sees
    ///     them). Default: false.
    public init(configuration: URLSessionConfiguration = .ephemeral, followsRedirects: Bool = false) {
        let configuration = configuration.copy() as! URLSessionConfiguration // the caller's stays as it is
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        session = URLSession(configuration: configuration, delegate: followsRedirects ? nil : RedirectRefusal(), delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Sends `request` with a data task; cancelling the calling task cancels the data task.
    /// - Parameter request: The request to send.
    /// - Returns: The response, whatever its status.
    /// - Throws: The session's error (a `URLError`), or `URLError(.badServerResponse)` when the
    ///   response is not HTTP.
    public func send(_ request: URLRequest) async throws -> HTTPTransportResponse {
        var request = request
        request.cachePolicy = .reloadIgnoringLocalCacheData
        let box = TaskBox()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPTransportResponse, any Error>) in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error {
                        continuation.resume(throwing: Self.clarified(error))
                    } else if let http = response as? HTTPURLResponse {
                        continuation.resume(returning: HTTPTransportResponse(
                            statusCode: http.statusCode, headers: HTTPHeaders(http), body: data ?? Data()))
                    } else {
                        continuation.resume(throwing: URLError(.badServerResponse))
                    }
                }
                box.set(task)
                task.resume()
            }
        } onCancel: {
            box.cancel()
        }
    }
}

extension URLSessionTransport {
    /// On Linux, `URLSession` (libcurl) decodes every response whose `Content-Encoding` or
    /// `Transfer-Encoding` it knows and fails the whole exchange, with the unspecific
    /// `URLError.unknown`, on one it does not know; asking for `Accept-Encoding: identity` does not turn
    /// the decoding off (measured, see Docs/OfflineHTTP.md). That failure is reported as
    /// `cannotDecodeContentData`, with the original error underneath, so callers can tell it apart.
    static func clarified(_ error: any Error) -> any Error {
        guard let urlError = error as? URLError, urlError.code == .unknown,
              urlError.localizedDescription.localizedCaseInsensitiveContains("content encoding") else { return error }
        var userInfo = urlError.userInfo
        userInfo[NSUnderlyingErrorKey] = urlError
        return URLError(.cannotDecodeContentData, userInfo: userInfo)
    }
}

/// Declines every redirect, so the task completes with the redirect response.
private final class RedirectRefusal: NSObject, URLSessionTaskDelegate, Sendable {
    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}

/// Holds the data task so that a cancellation arriving from another thread can reach it.
private final class TaskBox: Sendable {
    private let state = Locked<(task: URLSessionDataTask?, cancelled: Bool)>((nil, false))

    func set(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state in
            state.task = task
            return state.cancelled
        }
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = state.withLock { state in
            state.cancelled = true
            return state.task
        }
        task?.cancel()
    }
}
