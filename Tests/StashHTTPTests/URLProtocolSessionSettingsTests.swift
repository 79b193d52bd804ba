import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// The settings of the session's own configuration that a protocol is not shown, kept by `cached(by:)`.
@Suite("URLProtocol: the session's configuration is kept")
struct URLProtocolSessionSettingsTests {
    /// A plain session over the fixture's cache, from `configure`d ephemeral settings.
    private func session(_ fixture: URLProtocolFixture, partition: HTTPCachePartitioning = .byCredentials,
                         _ configure: (URLSessionConfiguration) -> Void = { _ in }) -> URLSession {
        let configuration = URLSessionConfiguration.patient
        configure(configuration)
        return URLSession(configuration: configuration.cached(by: fixture.cache, partition: partition))
    }

    @Test("timeoutIntervalForRequest bounds a hanging origin, and the stored response is served stale at once")
    func sessionTimeout() async throws {
        let fixture = try URLProtocolFixture()
        fixture.routeRevalidatable("/todos", body: "stored")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: 600)
        fixture.server.route("/todos", Self.hanging)
        let short = session(fixture) { $0.timeoutIntervalForRequest = 1 }
        defer { short.finishTasksAndInvalidate() }

        let offline = try await fixture.get("/todos", session: short)
        #expect(offline.body == "stored")
        #expect(offline.response.cacheStatus?.source == .stale)
        // Which timeout bounded the wait is told by the request the cache sends for this session, not by
        // the clock: on a loaded CI machine the 1 s path itself took 42-78 s, as long as the default 60 s.
        let settings = SessionSettings(short.configuration, partitioning: .byCredentials)
        let sent = HTTPCacheURLProtocol.prepare(URLRequest(url: fixture.server.url("/todos")), settings: settings)
        #expect(sent.request.timeoutInterval == 1, "the cache's request would wait \(sent.request.timeoutInterval) s, not the session's 1 s")
    }

    @Test("a request's own timeout wins over the session's")
    func requestTimeoutWins() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/slow", Self.hanging)
        let long = session(fixture) { $0.timeoutIntervalForRequest = 300 }
        defer { long.finishTasksAndInvalidate() }
        var request = URLRequest(url: fixture.server.url("/slow"))
        request.timeoutInterval = 1
        let error = await urlError { _ = try await fixture.send(request, session: long) }
        #expect(error?.code == .timedOut)
    }

    @Test("timeouts a transport cannot take (infinite, NaN, zero, negative, huge) leave the request's own")
    func unusableTimeouts() {
        for value in [TimeInterval.infinity, .nan, 0, -1, 1e300] {
            var settings = SessionSettings()
            settings.timeoutIntervalForRequest = value
            let prepared = HTTPCacheURLProtocol.prepare(URLRequest(url: URL(string: "http://127.0.0.1:1/a")!), settings: settings)
            #expect(prepared.request.timeoutInterval == (value == 1e300 ? 365 * 86_400 : 60), "timeout \(value)")
        }
    }

    @Test("requestCachePolicy .returnCacheDataDontLoad never contacts the origin")
    func sessionCachePolicy() async throws {
        let fixture = try URLProtocolFixture()
        fixture.routeRevalidatable("/todos", body: "stored")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: 600)
        let cacheOnly = session(fixture) { $0.requestCachePolicy = .returnCacheDataDontLoad }
        defer { cacheOnly.finishTasksAndInvalidate() }

        let stored = try await fixture.get("/todos", session: cacheOnly)
        #expect(stored.body == "stored" && stored.response.cacheStatus?.source == .stale)
        let error = await urlError { _ = try await fixture.get("/never", session: cacheOnly) }
        #expect(error?.code == .resourceUnavailable)
        #expect(fixture.server.requestCount("/todos") == 1 && fixture.server.requestCount("/never") == 0)
        // A request's own policy still wins.
        let reloaded = try await fixture.get("/todos", policy: .reloadIgnoringLocalCacheData, session: cacheOnly)
        #expect(reloaded.response.cacheStatus?.source == .network)
    }

    @Test("cookies are sent from and kept in the session's own cookie storage, never another session's")
    func cookies() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/login", status: 200, headers: [("Set-Cookie", "sid=alice; Path=/")], body: "ok")
        fixture.server.route("/me") { request in .init(body: "cookie=\(request.headers["cookie"] ?? "none")") }
        let alice = session(fixture)
        let bob = session(fixture)
        defer { alice.finishTasksAndInvalidate(); bob.finishTasksAndInvalidate() }

        _ = try await fixture.get("/login", session: alice)
        let jar = try #require(alice.configuration.httpCookieStorage)
        #expect(jar.cookies(for: fixture.server.url("/me"))?.map(\.value) == ["alice"])
        #expect(try await fixture.get("/me", session: alice).body == "cookie=sid=alice")
        #expect(try await fixture.get("/me", session: bob).body == "cookie=none")
    }

    /// An origin that answers only after the test is over.
    private static let hanging: LoopbackHTTPServer.Handler = { _ in .init(body: "too late", delay: 10) }
}
