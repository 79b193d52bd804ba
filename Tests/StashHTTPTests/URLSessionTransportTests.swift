import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

@Suite("URLSession transport (URLProtocol stubs)")
struct URLSessionTransportTests {
    private let host = StubURLProtocol.makeHost()
    private var url: URL { URL(string: "https://\(host)/items?b=2&a=1")! }

    private func makeCache(_ directory: TemporaryDirectory, clock: TestClock) throws -> HTTPCache {
        try HTTPCache(diskConfig: directory.diskConfig(), transport: URLSessionTransport(configuration: StubURLProtocol.configuration),
                      now: clock.function)
    }

    @Test("the session keeps no cache of its own")
    func sessionDoesNotCache() {
        let transport = URLSessionTransport(configuration: StubURLProtocol.configuration)
        #expect(transport.session.configuration.urlCache == nil)
        #expect(transport.session.configuration.requestCachePolicy == .reloadIgnoringLocalCacheData)
    }

    @Test("the session has no cookie jar, and the caller's configuration is left as it was")
    func noCookiesAndCallerUntouched() {
        let configuration = URLSessionConfiguration.ephemeral
        let jar = configuration.httpCookieStorage
        let transport = URLSessionTransport(configuration: configuration)
        #expect(transport.session.configuration.httpShouldSetCookies == false)
        #expect(transport.session.configuration.httpCookieStorage == nil)
        #expect(configuration.urlCache != nil && configuration.httpShouldSetCookies && configuration.httpCookieStorage === jar)
    }

    @Test("status, header fields and body come through")
    func responseConversion() async throws {
        StubURLProtocol.answer(host, with: .response(status: 203, headers: ["ETag": "\"e\"", "X-Custom": "yes"], body: Data("body".utf8)))
        let response = try await URLSessionTransport(configuration: StubURLProtocol.configuration).send(URLRequest(url: url))
        #expect(response.statusCode == 203)
        #expect(response.headers["etag"] == "\"e\"")
        #expect(response.headers["x-custom"] == "yes")
        #expect(response.body == Data("body".utf8))
    }

    @Test("a URLSession error is thrown as the URLError it is")
    func errorsPassThrough() async throws {
        StubURLProtocol.answer(host, with: .failure(.notConnectedToInternet))
        await #expect(throws: URLError.self) {
            _ = try await URLSessionTransport(configuration: StubURLProtocol.configuration).send(URLRequest(url: url))
        }
    }

    @Test("through URLSession: stored, served from the cache, revalidated, then served stale offline")
    func fullCycle() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let cache = try makeCache(directory, clock: clock)
        StubURLProtocol.answer(host, with: .response(status: 200, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\""], body: Data("one".utf8)))
        #expect(try await cache.response(for: url).source.isNetwork)
        #expect(try await cache.response(for: URL(string: "https://\(host)/items?a=1&b=2")!).source.isCache)

        clock.advance(by: 61)
        StubURLProtocol.answer(host, with: .response(status: 304, headers: ["ETag": "\"v1\""], body: Data()))
        let revalidated = try await cache.response(for: url)
        #expect(revalidated.source.isRevalidated)
        #expect(revalidated.text == "one")
        #expect(StubURLProtocol.requests(to: host).last?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")

        clock.advance(by: 61)
        StubURLProtocol.answer(host, with: .failure(.notConnectedToInternet))
        let offline = try await cache.response(for: url)
        #expect((offline.source.staleReason as? URLError)?.code == .notConnectedToInternet)
        #expect(offline.text == "one")
        #expect(StubURLProtocol.requests(to: host).count == 3)
    }
}
