import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// A plain `URLSession` set up with `cached(by:)`, against the loopback server.
@Suite("URLProtocol: existing URLSession code gets the offline cache")
struct URLProtocolTests {
    // MARK: Online

    @Test("a response is loaded and stored, then served from the store while fresh")
    func onlineStoreAndFreshHit() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "[1,2]")
        let first = try await fixture.get("/todos")
        fixture.clock.advance(by: 30)
        let second = try await fixture.get("/todos")

        #expect(first.body == "[1,2]" && second.body == "[1,2]")
        #expect(first.response.statusCode == 200 && second.response.statusCode == 200)
        #expect(first.response.stashCacheField == "network; age=0")
        #expect(second.response.stashCacheField == "cache; age=30")
        #expect(second.response.cacheStatus == HTTPCacheStatus(source: .cache, age: 30))
        #expect(second.response.value(forHTTPHeaderField: "Cache-Control") == "max-age=60")
        #expect(fixture.server.requestCount("/todos") == 1)
        #expect(fixture.cache.statistics.hits == 1)
    }

    @Test("a stale response is revalidated with If-None-Match and a 304 serves the stored body")
    func revalidationWith304() async throws {
        let fixture = try URLProtocolFixture()
        fixture.routeRevalidatable("/todos", body: "stored")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: 120)
        let revalidated = try await fixture.get("/todos")

        #expect(revalidated.body == "stored")
        #expect(revalidated.response.statusCode == 200)
        #expect(revalidated.response.cacheStatus?.source == .revalidated)
        #expect(fixture.server.requestCount("/todos") == 2)
        #expect(fixture.server.lastRequest("/todos")?.headers["if-none-match"] == "\"v1\"")
    }

    @Test("a HEAD request goes through the cache too")
    func headRequest() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "[1,2]")
        var request = URLRequest(url: fixture.server.url("/todos"))
        request.httpMethod = "HEAD"
        let first = try await fixture.send(request)
        let second = try await fixture.send(request)
        #expect(first.body.isEmpty && second.body.isEmpty)
        #expect(second.response.cacheStatus?.source == .cache)
        #expect(fixture.server.requestCount("/todos") == 1)
    }

    // MARK: Offline

    @Test("with the server stopped, the stale stored response is served with the source header and the error")
    func staleWhenServerStopped() async throws {
        let fixture = try URLProtocolFixture()
        fixture.routeRevalidatable("/todos", body: "last good")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: 600)
        fixture.server.stop()
        let offline = try await fixture.get("/todos")

        #expect(offline.body == "last good")
        #expect(offline.response.statusCode == 200)
        let field = try #require(offline.response.stashCacheField)
        #expect(field.hasPrefix("stale; age=600; error=\""))
        let status = try #require(offline.response.cacheStatus)
        #expect(status.source == .stale && status.age == 600)
        // The refused connection's description, whose words differ by platform.
        #expect(status.staleReason?.isEmpty == false && status.staleReason != HTTPCacheError.staleAccepted.description)
    }

    @Test("with the server stopped and nothing stored, the task fails with the original URLError")
    func offlineWithNothingStored() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.stop()
        let error = await urlError { _ = try await fixture.get("/todos") }
        #expect(error?.code == .cannotConnectToHost)
    }

    @Test("a 5xx serves the stored response, with the status as the reason")
    func serverErrorServesStale() async throws {
        let fixture = try URLProtocolFixture()
        fixture.routeRevalidatable("/todos", body: "last good")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: 600)
        fixture.server.route("/todos", status: 503, body: "down")
        let response = try await fixture.get("/todos")
        #expect(response.body == "last good" && response.response.statusCode == 200)
        #expect(response.response.cacheStatus?.staleReason == HTTPCacheError.serverError(statusCode: 503).description)
    }

    @Test("cancelling a task while the server is answering stops the load; the task fails with cancelled")
    func cancellation() async throws {
        let fixture = try URLProtocolFixture()
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        fixture.server.route("/slow") { _ in
            arrival.yield()
            return .init(body: "too late", delay: 3)
        }
        let session = fixture.session, request = URLRequest(url: fixture.server.url("/slow"))
        let task = Task { try await session.data(for: request) }
        for await _ in arrived { break } // the request went through the protocol and reached the server
        task.cancel()
        // Not timed: had the load not been cancelled, the server would have answered after its delay.
        let result = await task.result
        guard case .failure(let error) = result else { Issue.record("got \(result)"); return }
        #expect((error as? URLError)?.code == .cancelled)
    }

    @Test("a stored response that may not be served stale: the task fails with the original URLError")
    func mustRevalidateOffline() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/strict", headers: [("Cache-Control", "max-age=60, must-revalidate"), ("ETag", "\"s\"")], body: "strict")
        _ = try await fixture.get("/strict")
        fixture.clock.advance(by: 600)
        fixture.server.stop()
        let error = await urlError { _ = try await fixture.get("/strict") }
        #expect(error?.code == .cannotConnectToHost)
    }

    // MARK: Other methods

    @Test("a POST goes to the server with its body and removes the stored GET of its URL")
    func postInvalidatesStoredGet() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos") { request in
            request.method == "POST"
                ? .init(status: 201, body: "created")
                : .init(status: 200, headers: [("Cache-Control", "max-age=600")], body: "list")
        }
        _ = try await fixture.get("/todos")
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .cache)

        var post = URLRequest(url: fixture.server.url("/todos"))
        post.httpMethod = "POST"
        post.httpBody = Data(#"{"title":"new"}"#.utf8)
        let created = try await fixture.send(post)
        #expect(created.response.statusCode == 201 && created.body == "created")
        #expect(created.response.cacheStatus?.source == .network)
        #expect(fixture.server.lastRequest("/todos")?.body == Data(#"{"title":"new"}"#.utf8))

        let after = try await fixture.get("/todos")
        #expect(after.response.cacheStatus?.source == .network)
        #expect(fixture.server.requestCount("/todos") == 3)
    }

    @Test("an upload task's body reaches the server")
    func uploadTaskBody() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/upload", status: 201, body: "ok")
        var request = URLRequest(url: fixture.server.url("/upload"))
        request.httpMethod = "PUT"
        let payload = Data(repeating: 7, count: 10_000)
        let (data, response) = try await fixture.session.upload(for: request, from: payload)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)
        #expect(String(decoding: data, as: UTF8.self) == "ok")
        #expect(fixture.server.lastRequest("/upload")?.body == payload)
    }

    // MARK: Redirects, large bodies, headers

    @Test("a redirect is followed and its target's response delivered and stored")
    func redirect() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/old", status: 301, headers: [("Location", "/new")])
        fixture.server.route("/new", headers: [("Cache-Control", "max-age=60")], body: "moved here")
        let first = try await fixture.get("/old")
        let second = try await fixture.get("/old")

        #expect(first.response.statusCode == 200 && first.body == "moved here")
        #expect(second.body == "moved here" && second.response.cacheStatus?.source == .cache)
        #expect(fixture.server.requestCount("/new") == 1)
    }

    @Test("a 1 MB body arrives whole from the network and from the store")
    func oneMegabyteBody() async throws {
        let fixture = try URLProtocolFixture()
        let body = String((0..<1_000_000).map { _ in "abcdefghij".randomElement()! })
        fixture.server.route("/big", headers: [("Cache-Control", "max-age=60")], body: body)
        let network = try await fixture.get("/big")
        let stored = try await fixture.get("/big")
        #expect(network.body.utf8.count == 1_000_000 && network.body == body)
        #expect(stored.body == body && stored.response.cacheStatus?.source == .cache)
    }

    @Test("the session's additional header fields reach the server")
    func additionalHeaders() async throws {
        let fixture = try URLProtocolFixture(additionalHeaders: ["Authorization": "Bearer t0ken", "X-Team": "blue"])
        fixture.server.route("/me", body: "me")
        _ = try await fixture.get("/me")
        #expect(fixture.server.lastRequest("/me")?.headers["authorization"] == "Bearer t0ken")
        #expect(fixture.server.lastRequest("/me")?.headers["x-team"] == "blue")
    }

    // MARK: Sharing and APIs

    @Test("two sessions share one HTTPCache: what one stored, the other is served")
    func twoSessionsShareOneCache() async throws {
        let fixture = try URLProtocolFixture()
        let other = URLProtocolFixture.session(for: fixture.cache, additionalHeaders: ["X-Client": "second"])
        defer { other.finishTasksAndInvalidate() }
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "shared")

        let first = try await fixture.get("/todos")
        let second = try await fixture.get("/todos", session: other)
        #expect(first.response.cacheStatus?.source == .network)
        #expect(second.body == "shared" && second.response.cacheStatus?.source == .cache)
        #expect(fixture.server.requestCount("/todos") == 1)
    }

    @Test("40 concurrent requests from two sessions are all answered from the one cache")
    func concurrentRequestsFromTwoSessions() async throws {
        let fixture = try URLProtocolFixture()
        let other = URLProtocolFixture.session(for: fixture.cache)
        defer { other.finishTasksAndInvalidate() }
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "shared")
        _ = try await fixture.get("/todos")
        let sessions = [fixture.session, other], request = URLRequest(url: fixture.server.url("/todos"))
        let sources = try await withThrowingTaskGroup(of: HTTPCacheStatus.Source?.self) { group in
            for index in 0..<40 {
                let session = sessions[index % 2]
                group.addTask { (try await session.data(for: request).1 as? HTTPURLResponse)?.cacheStatus?.source }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(sources.count == 40 && sources.allSatisfy { $0 == .cache })
        #expect(fixture.server.requestCount("/todos") == 1)
    }

    @Test("a data task with a completion handler gets the same answers")
    func completionHandlerDataTask() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "handled")
        let request = URLRequest(url: fixture.server.url("/todos"))
        for expected in [HTTPCacheStatus.Source.network, .cache] {
            let (data, response) = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                fixture.session.dataTask(with: request) { data, response, error in
                    if let data, let response { continuation.resume(returning: (data, response)) } else {
                        continuation.resume(throwing: error ?? URLError(.unknown))
                    }
                }.resume()
            }
            #expect(String(decoding: data, as: UTF8.self) == "handled")
            #expect((response as? HTTPURLResponse)?.cacheStatus?.source == expected)
        }
    }

    @Test("a session with a data delegate gets the response, the body and the completion")
    func dataDelegate() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "delegated")
        let collector = DataCollector()
        let session = URLSession(configuration: URLSessionConfiguration.patient.cached(by: fixture.cache),
                                 delegate: collector, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let result = await collector.run(session.dataTask(with: fixture.server.url("/todos")))
        #expect(result.error == nil)
        #expect(String(decoding: result.data, as: UTF8.self) == "delegated")
        #expect((result.response as? HTTPURLResponse)?.cacheStatus?.source == .network)
    }

    @Test("a session whose cache was unbound goes straight to the network")
    func unboundSessionUsesNetwork() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos", headers: [("Cache-Control", "max-age=60")], body: "plain")
        _ = try await fixture.get("/todos")
        HTTPCacheURLProtocol.unbind(fixture.cache)
        let plain = try await fixture.get("/todos")
        #expect(plain.body == "plain" && plain.response.cacheStatus == nil)
        #expect(fixture.server.requestCount("/todos") == 2)
    }
}

/// A data delegate that collects one task's response, body and completion.
private final class DataCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked Sendable: the state is only touched under `lock`.
    struct Result {
        var response: URLResponse?
        var data = Data()
        var error: (any Error)?
    }

    private let lock = NSLock()
    private var result = Result()
    private var continuation: CheckedContinuation<Result, Never>?

    func run(_ task: URLSessionDataTask) async -> Result {
        await withCheckedContinuation { continuation in
            lock.withLock { self.continuation = continuation }
            task.resume()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        lock.withLock { result.response = response }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        lock.withLock { result.data.append(data) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, result) = lock.withLock {
            self.result.error = error
            defer { self.continuation = nil }
            return (self.continuation, self.result)
        }
        continuation?.resume(returning: result)
    }
}
