import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Several variants per URL (RFC 9111 §4.1, §4.3.1, §4.3.4) against a real server.
@Suite("Several Vary variants per URL")
struct VaryVariantsTests {
    /// French for `fr`, English for anything else; answers 304 when `If-None-Match` lists the tag of
    /// the representation it would send.
    static func languageServer() -> LoopbackHTTPServer.Handler {
        { request in
            let french = request.headers["accept-language"] == "fr"
            let tag = french ? "\"fr\"" : "\"en\""
            let headers = [("Vary", "Accept-Language"), ("ETag", tag), ("Cache-Control", "max-age=60")]
            if let list = request.headers["if-none-match"], list.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == tag }) {
                return .init(status: 304, headers: headers)
            }
            return .init(headers: headers, body: french ? "bonjour" : "hello")
        }
    }

    func get(_ fixture: LoopbackFixture, _ language: String) async throws -> CachedResponse {
        try await fixture.cache.response(for: fixture.request("/greeting", headers: ["Accept-Language": language]))
    }

    @Test("a request for a new variant names every stored ETag, and the 304 picks the matching stored response")
    func newVariantAnsweredBy304() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/greeting", Self.languageServer())
        #expect(try await get(fixture, "fr").text == "bonjour")
        #expect(try await get(fixture, "en").text == "hello")
        let german = try await get(fixture, "de")
        #expect(german.source.isRevalidated)
        #expect(german.text == "hello")
        let sent = fixture.server.lastRequest("/greeting")?.headers["if-none-match"] ?? ""
        #expect(Set(sent.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) == ["\"fr\"", "\"en\""])
        // The German variant is now stored in its own right.
        #expect(try await get(fixture, "de").source.isCache)
        #expect(try await get(fixture, "fr").text == "bonjour")
        #expect(fixture.server.requestCount("/greeting") == 3)
    }

    @Test("revalidating a stale variant also names the other variants' ETags, and the 304 keeps each body with its variant")
    func staleVariantRevalidated() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/greeting", Self.languageServer())
        _ = try await get(fixture, "fr")
        _ = try await get(fixture, "en")
        fixture.clock.advance(by: 120)
        let french = try await get(fixture, "fr")
        #expect(french.source.isRevalidated)
        #expect(french.text == "bonjour")
        #expect(fixture.server.lastRequest("/greeting")?.headers["if-none-match"]?.contains("\"en\"") == true)
        let english = try await get(fixture, "en")
        #expect(english.source.isRevalidated)
        #expect(english.text == "hello")
    }

    @Test("a 304 is matched to a variant by strong tag first, then by the latest weak match")
    func selection() {
        let clock = TestClock()
        func stored(_ tag: String, _ offset: TimeInterval) -> StoredResponse {
            StoredResponse(url: exampleURL, method: "GET", namespace: "", statusCode: 200, headers: ["ETag": tag], body: Data(tag.utf8),
                           requestTime: clock.now + offset, responseTime: clock.now + offset)
        }
        let variants = [stored("\"a\"", 0), stored("W/\"b\"", 0), stored("W/\"b\"", 10)]
        let strong = HTTPTransportResponse(statusCode: 304, headers: ["ETag": "\"a\""])
        #expect(HTTPCache.selectVariant(for: strong, own: nil, variants: variants)?.headers["etag"] == "\"a\"")
        let weak = HTTPTransportResponse(statusCode: 304, headers: ["ETag": "W/\"b\""])
        #expect(HTTPCache.selectVariant(for: weak, own: nil, variants: variants)?.responseTime == clock.now + 10)
        let unknown = HTTPTransportResponse(statusCode: 304, headers: ["ETag": "\"zzz\""])
        #expect(HTTPCache.selectVariant(for: unknown, own: nil, variants: variants) == nil)
        // Only the request's own response was validated: the 304 is about it, whatever tag it carries.
        let own = stored("\"old\"", 0)
        #expect(HTTPCache.selectVariant(for: unknown, own: own, variants: []) == own)
    }
}
