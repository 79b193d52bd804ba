import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// `URLRequest.cachePolicy` mapped onto StashHTTP's policies, through a plain `URLSession`.
@Suite("URLProtocol: URLRequest cache policies")
struct URLProtocolPolicyTests {
    @Test("each Foundation policy maps to its StashHTTP policy", arguments: [
        (URLRequest.CachePolicy.useProtocolCachePolicy, HTTPCachePolicy.useProtocolRules),
        (.returnCacheDataElseLoad, .returnCacheElseLoad),
        (.returnCacheDataDontLoad, .cacheOnly),
        (.reloadIgnoringLocalCacheData, .reload),
        (.reloadIgnoringLocalAndRemoteCacheData, .reload),
        (.reloadRevalidatingCacheData, .revalidate),
    ])
    func mappingTable(foundation: URLRequest.CachePolicy, stash: HTTPCachePolicy) {
        #expect(HTTPCachePolicy(foundation) == stash)
    }

    /// A fixture with one response stored (fresh for 60 s, with an ETag) and the clock moved `age` on.
    private func stored(_ name: String = #function, age: TimeInterval) async throws -> URLProtocolFixture {
        let fixture = try URLProtocolFixture(name: name)
        fixture.routeRevalidatable("/todos", body: "stored")
        _ = try await fixture.get("/todos")
        fixture.clock.advance(by: age)
        return fixture
    }

    @Test("useProtocolCachePolicy: fresh served, stale revalidated")
    func useProtocolCachePolicy() async throws {
        let fixture = try await stored(age: 10)
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .cache)
        fixture.clock.advance(by: 100)
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .revalidated)
        #expect(fixture.server.requestCount("/todos") == 2)
    }

    @Test("returnCacheDataElseLoad: a stale stored response is served without asking the server")
    func returnCacheDataElseLoad() async throws {
        let fixture = try await stored(age: 600)
        let response = try await fixture.get("/todos", policy: .returnCacheDataElseLoad)
        #expect(response.body == "stored")
        #expect(response.response.cacheStatus?.source == .stale)
        #expect(response.response.cacheStatus?.staleReason == HTTPCacheError.staleAccepted.description)
        #expect(fixture.server.requestCount("/todos") == 1)

        fixture.server.route("/other", body: "loaded")
        #expect(try await fixture.get("/other", policy: .returnCacheDataElseLoad).body == "loaded")
    }

    @Test("returnCacheDataDontLoad: stored served without the network; nothing stored fails with resourceUnavailable")
    func returnCacheDataDontLoad() async throws {
        let fixture = try await stored(age: 600)
        fixture.server.stop()
        #expect(try await fixture.get("/todos", policy: .returnCacheDataDontLoad).body == "stored")
        let error = await urlError { _ = try await fixture.get("/never", policy: .returnCacheDataDontLoad) }
        #expect(error?.code == .resourceUnavailable)
    }

    @Test("reloadIgnoringLocalCacheData: a fresh stored response is not used, the new one is stored")
    func reloadIgnoringLocalCacheData() async throws {
        let fixture = try await stored(age: 10)
        let reloaded = try await fixture.get("/todos", policy: .reloadIgnoringLocalCacheData)
        #expect(reloaded.response.cacheStatus?.source == .network)
        #expect(fixture.server.requestCount("/todos") == 2)
        #expect(fixture.server.lastRequest("/todos")?.headers["if-none-match"] == nil)
    }

    @Test("reloadIgnoringLocalAndRemoteCacheData: reloads and asks intermediaries with Cache-Control: no-cache")
    func reloadIgnoringLocalAndRemoteCacheData() async throws {
        let fixture = try await stored(age: 10)
        let reloaded = try await fixture.get("/todos", policy: .reloadIgnoringLocalAndRemoteCacheData)
        #expect(reloaded.response.cacheStatus?.source == .network)
        #expect(fixture.server.lastRequest("/todos")?.headers["cache-control"] == "no-cache")
    }

    @Test("reloadRevalidatingCacheData: a fresh stored response is revalidated")
    func reloadRevalidatingCacheData() async throws {
        let fixture = try await stored(age: 10)
        let revalidated = try await fixture.get("/todos", policy: .reloadRevalidatingCacheData)
        #expect(revalidated.body == "stored")
        #expect(revalidated.response.cacheStatus?.source == .revalidated)
        #expect(fixture.server.lastRequest("/todos")?.headers["if-none-match"] == "\"v1\"")
    }
}
