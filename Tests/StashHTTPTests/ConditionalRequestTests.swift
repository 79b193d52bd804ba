import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// A client's own conditional request answered from the store (RFC 9111 §4.3.2).
@Suite("The caller's own conditional requests")
struct ConditionalRequestTests {
    func storedFixture() async throws -> LoopbackFixture {
        let fixture = try LoopbackFixture()
        let lastModified = fixture.clock.httpDate(offset: -3600)
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "W/\"v1\""), ("Last-Modified", lastModified)], body: "doc")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        return fixture
    }

    @Test("If-None-Match naming the stored ETag (weakly), or *, gets a 304 from the store", arguments: ["W/\"v1\"", "\"v1\"", "\"x\", W/\"v1\"", "*"])
    func ifNoneMatchHit(field: String) async throws {
        let fixture = try await storedFixture()
        let answer = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-None-Match": field]))
        #expect(answer.statusCode == 304)
        #expect(answer.source.isCache)
        #expect(answer.body.isEmpty)
        #expect(answer.headers["etag"] == "W/\"v1\"")
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("If-None-Match naming another ETag gets the stored response")
    func ifNoneMatchMiss() async throws {
        let fixture = try await storedFixture()
        let answer = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-None-Match": "\"v0\""]))
        #expect(answer.statusCode == 200)
        #expect(answer.text == "doc")
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("If-Modified-Since is compared with Last-Modified")
    func ifModifiedSince() async throws {
        let fixture = try await storedFixture()
        let later = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-Modified-Since": fixture.clock.httpDate(offset: -60)]))
        #expect(later.statusCode == 304)
        let earlier = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-Modified-Since": fixture.clock.httpDate(offset: -7200)]))
        #expect(earlier.statusCode == 200)
        #expect(earlier.text == "doc")
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("a stale stored response, or If-Match, sends the conditional request to the server as it is")
    func passThrough() async throws {
        let fixture = try await storedFixture()
        _ = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-Match": "\"v1\""]))
        #expect(fixture.server.requestCount("/doc") == 2)
        fixture.clock.advance(by: 120)
        _ = try await fixture.cache.response(for: fixture.request("/doc", headers: ["If-None-Match": "W/\"v1\""]))
        #expect(fixture.server.requestCount("/doc") == 3)
        #expect(fixture.server.lastRequest("/doc")?.headers["if-none-match"] == "W/\"v1\"")
    }
}
