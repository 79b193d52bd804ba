import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import StashHTTP

/// Everything a test of ``HTTPCacheURLProtocol`` needs: a loopback server, a cache in a folder of
/// its own with a test clock, and a plain `URLSession` set up with `cached(by:)`. Unbinding the
/// cache and invalidating the session when the fixture goes keeps tests apart.
final class URLProtocolFixture {
    let server: LoopbackHTTPServer
    let directory: TemporaryDirectory
    let clock = TestClock()
    let cache: HTTPCache
    let session: URLSession

    init(name: String = #function, additionalHeaders: [String: String]? = nil) throws {
        server = try LoopbackHTTPServer()
        directory = TemporaryDirectory(name)
        cache = try HTTPCache(diskConfig: directory.diskConfig(), transport: URLSessionTransport(configuration: .patient), now: clock.function)
        session = Self.session(for: cache, additionalHeaders: additionalHeaders)
    }

    deinit {
        // Not invalidateAndCancel(): in swift-corelibs-foundation, cancelling a task whose async
        // `data(for:)` just returned can resume that call's continuation a second time (a trap).
        session.finishTasksAndInvalidate()
        HTTPCacheURLProtocol.unbind(cache)
        server.stop()
    }

    /// Another plain session on the same cache.
    static func session(for cache: HTTPCache, additionalHeaders: [String: String]? = nil) -> URLSession {
        let configuration = URLSessionConfiguration.patient
        configuration.httpAdditionalHeaders = additionalHeaders
        return URLSession(configuration: configuration.cached(by: cache))
    }

    /// A GET of `path` with the async API.
    func get(_ path: String, policy: URLRequest.CachePolicy = .useProtocolCachePolicy,
             session: URLSession? = nil) async throws -> (body: String, response: HTTPURLResponse) {
        var request = URLRequest(url: server.url(path))
        request.cachePolicy = policy
        return try await send(request, session: session)
    }

    func send(_ request: URLRequest, session: URLSession? = nil) async throws -> (body: String, response: HTTPURLResponse) {
        let (data, response) = try await (session ?? self.session).data(for: request)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return (String(decoding: data, as: UTF8.self), http)
    }

    /// Routes `path` to a response that is fresh for `maxAge` seconds and has an ETag; answers a
    /// matching `If-None-Match` with 304.
    func routeRevalidatable(_ path: String, body: String, maxAge: Int = 60, etag: String = "\"v1\"") {
        server.route(path) { request in
            let headers = [("Cache-Control", "max-age=\(maxAge)"), ("ETag", etag)]
            if request.headers["if-none-match"] == etag { return .init(status: 304, headers: headers) }
            return .init(status: 200, headers: headers, body: body)
        }
    }
}

extension HTTPURLResponse {
    /// The raw `Stash-Cache` field, as code without StashHTTP reads it.
    var stashCacheField: String? { value(forHTTPHeaderField: "Stash-Cache") }
}

/// The `URLError` `body` throws; nil (and a recorded issue by the caller's `#expect`) otherwise.
func urlError(_ body: () async throws -> Void) async -> URLError? {
    do {
        try await body()
        return nil
    } catch {
        return error as? URLError
    }
}
