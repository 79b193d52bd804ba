import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// End to end over real sockets: URLSession → 127.0.0.1 → the tests' own HTTP server.
@Suite("Real HTTP server on 127.0.0.1")
struct LoopbackServerTests {
    let server: LoopbackHTTPServer
    let directory = TemporaryDirectory()
    let clock = TestClock()
    let cache: HTTPCache

    init() throws {
        server = try LoopbackHTTPServer()
        cache = try HTTPCache(diskConfig: directory.diskConfig(), transport: URLSessionTransport(configuration: .patient),
                              now: clock.function)
    }

    @Test("a cacheable response is stored and the next request never reaches the server")
    func freshHit() async throws {
        server.route("/todos", headers: [("Cache-Control", "max-age=60"), ("Content-Type", "application/json")], body: #"["a"]"#)
        let first = try await cache.response(for: server.url("/todos"))
        #expect(first.source.isNetwork)
        #expect(first.headers["content-type"] == "application/json")
        clock.advance(by: 30)
        let second = try await cache.response(for: server.url("/todos"))
        #expect(second.source.isCache)
        #expect(second.text == #"["a"]"#)
        #expect(server.requestCount("/todos") == 1)
    }

    @Test("an ETag is revalidated with If-None-Match and the server's 304 serves the stored body")
    func etagRevalidation() async throws {
        server.route("/etag") { request in
            if request.headers["if-none-match"] == "\"rev-1\"" {
                return .init(status: 304, headers: [("ETag", "\"rev-1\""), ("Cache-Control", "max-age=10")])
            }
            return .init(headers: [("ETag", "\"rev-1\""), ("Cache-Control", "max-age=10")], body: "payload")
        }
        _ = try await cache.response(for: server.url("/etag"))
        clock.advance(by: 11)
        let revalidated = try await cache.response(for: server.url("/etag"))
        #expect(revalidated.source.isRevalidated)
        #expect(revalidated.text == "payload")
        #expect(server.requestCount("/etag") == 2)
        #expect(server.lastRequest("/etag")?.headers["if-none-match"] == "\"rev-1\"")
    }

    @Test("Last-Modified is revalidated with If-Modified-Since")
    func lastModifiedRevalidation() async throws {
        let lastModified = clock.httpDate(offset: -3600)
        server.route("/dated") { request in
            if request.headers["if-modified-since"] == lastModified { return .init(status: 304) }
            return .init(headers: [("Last-Modified", lastModified), ("Cache-Control", "max-age=5")], body: "dated")
        }
        _ = try await cache.response(for: server.url("/dated"))
        clock.advance(by: 6)
        #expect(try await cache.response(for: server.url("/dated")).source.isRevalidated)
    }

    @Test("Date, Age and Expires from the wire set the age and lifetime")
    func dateAgeExpires() async throws {
        let clock = clock
        server.route("/aged") { _ in
            .init(headers: [("Date", clock.httpDate()), ("Age", "30"), ("Expires", clock.httpDate(offset: 100))], body: "aged")
        }
        let response = try await cache.response(for: server.url("/aged"))
        #expect(response.age == 30)
        #expect(response.freshnessLifetime == 100)
        clock.advance(by: 69)
        #expect(try await cache.response(for: server.url("/aged")).source.isCache)
        clock.advance(by: 1)
        #expect(try await cache.response(for: server.url("/aged")).source.isNetwork)
    }

    @Test("Vary selects a response per request header value")
    func vary() async throws {
        server.route("/greeting") { request in
            let language = request.headers["accept-language"] ?? "en"
            return .init(headers: [("Vary", "Accept-Language"), ("Cache-Control", "max-age=60")], body: language == "fr" ? "bonjour" : "hello")
        }
        var french = URLRequest(url: server.url("/greeting"))
        french.setValue("fr", forHTTPHeaderField: "Accept-Language")
        var english = URLRequest(url: server.url("/greeting"))
        english.setValue("en", forHTTPHeaderField: "Accept-Language")
        #expect(try await cache.response(for: french).text == "bonjour")
        #expect(try await cache.response(for: english).text == "hello")
        #expect(try await cache.response(for: french).text == "bonjour")
        #expect(server.requestCount("/greeting") == 2)
    }

    @Test("a stopped server refuses the connection and the stale response is served with the error")
    func offline() async throws {
        server.route("/feed", headers: [("Cache-Control", "max-age=60")], body: "feed v1")
        _ = try await cache.response(for: server.url("/feed"))
        clock.advance(by: 600)
        server.stop()
        let response = try await cache.response(for: server.url("/feed"))
        guard case .stale(let error) = response.source else { Issue.record("got \(response.source)"); return }
        #expect(HTTPCacheConfiguration.isConnectionError(error))
        #expect(response.text == "feed v1")
        #expect(response.age == 600)
    }

    @Test("a stopped server with nothing stored gives a network error")
    func offlineWithoutStoredResponse() async throws {
        server.stop()
        let error = await cacheError { _ = try await cache.response(for: server.url("/never")) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(HTTPCacheConfiguration.isConnectionError(underlying))
    }

    @Test("a 5xx from the server serves the stored response")
    func serverError() async throws {
        server.route("/flaky", headers: [("Cache-Control", "max-age=1")], body: "good")
        _ = try await cache.response(for: server.url("/flaky"))
        clock.advance(by: 5)
        server.route("/flaky", status: 503, body: "maintenance")
        let response = try await cache.response(for: server.url("/flaky"))
        #expect(response.text == "good")
        guard case .stale(let reason) = response.source, case .serverError(503) = reason as? HTTPCacheError else {
            Issue.record("got \(response.source)"); return
        }
    }

    @Test("a slow server that times out counts as offline")
    func slowServer() async throws {
        server.route("/slow", headers: [("Cache-Control", "max-age=1")], body: "quick")
        _ = try await cache.response(for: server.url("/slow"))
        clock.advance(by: 5)
        server.route("/slow", headers: [("Cache-Control", "max-age=1")], body: "late", delay: 10)
        var request = URLRequest(url: server.url("/slow"))
        request.timeoutInterval = 0.5
        let response = try await cache.response(for: request)
        #expect((response.source.staleReason as? URLError)?.code == .timedOut)
        #expect(response.text == "quick")
    }

    @Test("a POST invalidates what is stored for its URL")
    func postInvalidates() async throws {
        server.route("/items") { request in
            request.method == "POST" ? .init(status: 201) : .init(headers: [("Cache-Control", "max-age=600")], body: "list")
        }
        _ = try await cache.response(for: server.url("/items"))
        var post = URLRequest(url: server.url("/items"))
        post.httpMethod = "POST"
        post.httpBody = Data("new item".utf8)
        #expect(try await cache.response(for: post).statusCode == 201)
        #expect(try await cache.response(for: server.url("/items")).source.isNetwork)
        #expect(server.requestCount("/items") == 3)
    }

    @Test("no-store responses reach the server every time")
    func noStore() async throws {
        server.route("/private", headers: [("Cache-Control", "no-store")], body: "secret")
        _ = try await cache.response(for: server.url("/private"))
        _ = try await cache.response(for: server.url("/private"))
        #expect(server.requestCount("/private") == 2)
        #expect(cache.storedResponseCount == 0)
    }

    @Test("HEAD is cached apart and has no body")
    func head() async throws {
        server.route("/doc", headers: [("Cache-Control", "max-age=60")], body: "document")
        var head = URLRequest(url: server.url("/doc"))
        head.httpMethod = "HEAD"
        let first = try await cache.response(for: head)
        #expect(first.body.isEmpty)
        #expect(try await cache.response(for: head).source.isCache)
        #expect(try await cache.response(for: server.url("/doc")).text == "document")
        #expect(server.requestCount("/doc") == 2)
    }

    @Test("cancelling the calling task cancels the request on the wire")
    func cancellation() async throws {
        server.route("/slow-cancel", body: "too late", delay: 3)
        let cache = cache
        let url = server.url("/slow-cancel")
        let task = Task { try await cache.response(for: url) }
        task.cancel()
        // Not timed (the machine may be loaded): had the request not been cancelled, the server
        // would have answered after its delay and the task would have succeeded.
        let result = await task.result
        guard case .failure(let error) = result, case .network = error as? HTTPCacheError else {
            Issue.record("got \(result)"); return
        }
    }
}
