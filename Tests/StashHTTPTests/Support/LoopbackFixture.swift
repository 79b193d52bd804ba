import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import StashHTTP

/// One loopback server, a fresh folder, a test clock and a cache over `URLSession` to that server.
struct LoopbackFixture {
    let server: LoopbackHTTPServer
    let directory: TemporaryDirectory
    let clock = TestClock()
    let cache: HTTPCache

    init(configuration: HTTPCacheConfiguration = HTTPCacheConfiguration(), name: String = #function) throws {
        server = try LoopbackHTTPServer()
        directory = TemporaryDirectory(name)
        cache = try HTTPCache(diskConfig: directory.diskConfig(), transport: URLSessionTransport(configuration: .patient),
                              configuration: configuration, now: clock.function)
    }

    func url(_ path: String) -> URL { server.url(path) }

    /// A request to `path` with the given header fields and method.
    func request(_ path: String, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
        StashHTTPTests.request(server.url(path), method: method, headers: headers)
    }
}
