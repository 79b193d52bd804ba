import Foundation
import Testing
@testable import StashHTTP

@Suite("Revalidation (RFC 9111 §4.3)")
struct RevalidationTests {
    @Test("a stale response with an ETag is revalidated with If-None-Match")
    func ifNoneMatch() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "Last-Modified": fixture.clock.httpDate(offset: -60)])
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 11)
        _ = try await fixture.cache.response(for: exampleURL)
        let sent = try #require(fixture.transport.lastRequest)
        #expect(sent.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        #expect(sent.value(forHTTPHeaderField: "If-Modified-Since") == nil)
    }

    @Test("without an ETag, Last-Modified is sent back as If-Modified-Since")
    func ifModifiedSince() async throws {
        let fixture = try CacheFixture()
        let lastModified = fixture.clock.httpDate(offset: -60)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "Last-Modified": lastModified])
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 11)
        _ = try await fixture.cache.response(for: exampleURL)
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-Modified-Since") == lastModified)
    }

    @Test("a 304 serves the stored body, refreshes the stored headers and restarts freshness")
    func notModifiedRefreshes() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\"", "X-Version": "1"], body: "the body")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 100)
        fixture.transport.respond(304, headers: ["Cache-Control": "max-age=60", "ETag": "\"v1\"", "X-Version": "2"])
        let revalidated = try await fixture.cache.response(for: exampleURL)
        #expect(revalidated.source.isRevalidated)
        #expect(revalidated.statusCode == 200)
        #expect(revalidated.text == "the body")
        #expect(revalidated.headers["x-version"] == "2")
        #expect(revalidated.age == 0)
        #expect(revalidated.freshnessLifetime == 60)
        fixture.clock.advance(by: 59)
        let cached = try await fixture.cache.response(for: exampleURL)
        #expect(cached.source.isCache)
        #expect(cached.headers["x-version"] == "2")
        #expect(fixture.transport.requestCount == 2)
        #expect(fixture.cache.statistics.revalidations == 1)
    }

    @Test("a 200 to a revalidation replaces the stored response")
    func changedResourceReplaces() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "ETag": "\"v1\""], body: "old")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 11)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "ETag": "\"v2\""], body: "new")
        let response = try await fixture.cache.response(for: exampleURL)
        #expect(response.source.isNetwork)
        #expect(response.text == "new")
        fixture.clock.advance(by: 11)
        _ = try await fixture.cache.response(for: exampleURL)
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-None-Match") == "\"v2\"")
    }

    @Test("a response marked no-cache is revalidated on every use, even while fresh")
    func noCacheAlwaysRevalidates() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "no-cache, max-age=600", "ETag": "\"v1\""], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.transport.respond(304, headers: ["ETag": "\"v1\""])
        #expect(try await fixture.cache.response(for: exampleURL).source.isRevalidated)
        #expect(fixture.transport.requestCount == 2)
    }

    @Test("with only a stale response stored, the caller's own conditional headers pass through untouched, and its 304 comes back as is")
    func callersConditionalPassesThrough() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600", "ETag": "\"mine\""], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 601) // a fresh one would answer it itself (ConditionalRequestTests)
        fixture.transport.respond(304, headers: ["ETag": "\"theirs\""])
        let response = try await fixture.cache.response(for: request(headers: ["If-None-Match": "\"theirs\""]))
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-None-Match") == "\"theirs\"")
        #expect(response.statusCode == 304)
        #expect(response.source.isNetwork)
        #expect(try await fixture.cache.response(for: exampleURL).text == "b")
    }

    @Test("a stale response without validators is simply loaded again")
    func noValidators() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=1"], body: "a")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 5)
        _ = try await fixture.cache.response(for: exampleURL)
        let sent = try #require(fixture.transport.lastRequest)
        #expect(sent.value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(sent.value(forHTTPHeaderField: "If-Modified-Since") == nil)
    }
}
