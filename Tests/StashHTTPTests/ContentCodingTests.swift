import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Unknown `Content-Encoding` and `Transfer-Encoding`: what the cache stores and how a 304 updates it.
@Suite("Unknown content and transfer codings")
struct ContentCodingTests {
    @Test("a 304 with unknown Content-Encoding and Transfer-Encoding freshens the stored response without changing its coding")
    func notModifiedWithUnknownCodings() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc") { request in
            if request.headers["if-none-match"] == "\"v1\"" {
                return .init(wire: .raw("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=60\r\n"
                    + "Content-Encoding: x-unknown\r\nTransfer-Encoding: x-unknown\r\nConnection: close\r\n\r\n"))
            }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=1")], body: "plain text")
        }
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 5)
        let revalidated = try await fixture.cache.response(for: fixture.url("/doc"))
        #expect(revalidated.source.isRevalidated)
        #expect(revalidated.text == "plain text")
        #expect(revalidated.headers["content-encoding"] == nil)
        #expect(revalidated.headers["transfer-encoding"] == nil)
        #expect(revalidated.freshnessLifetime == 60)
        fixture.clock.advance(by: 30)
        #expect(try await fixture.cache.response(for: fixture.url("/doc")).source.isCache)
    }

    @Test("a response with an unknown Content-Encoding is stored and served byte for byte by a transport that does not decode")
    func unknownContentEncodingStoredAsIs() async throws {
        let fixture = try CacheFixture()
        let bytes = "\u{1}\u{2}opaque\u{3}"
        fixture.transport.respond(200, headers: ["Content-Encoding": "x-unknown", "Cache-Control": "max-age=60"], body: bytes)
        _ = try await fixture.cache.response(for: exampleURL)
        let hit = try await fixture.cache.response(for: exampleURL)
        #expect(hit.source.isCache)
        #expect(hit.text == bytes)
        #expect(hit.headers["content-encoding"] == "x-unknown")
    }

    #if canImport(FoundationNetworking)
    /// The platform limit: FoundationNetworking's libcurl decodes every known coding and fails on an
    /// unknown one, whatever `Accept-Encoding` the request sends. The transport reports it as
    /// `cannotDecodeContentData`, and it is not taken for "offline".
    @Test("on Linux, URLSession cannot deliver an unknown coding; the failure is cannotDecodeContentData", arguments: [
        "Content-Encoding: x-unknown\r\nContent-Length: 5", "Transfer-Encoding: x-unknown",
    ])
    func linuxCannotDeliverUnknownCodings(field: String) async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/coded") { _ in .init(wire: .raw("HTTP/1.1 200 OK\r\n\(field)\r\nConnection: close\r\n\r\nhello")) }
        let request = fixture.request("/coded", headers: ["Accept-Encoding": "identity"])
        let error = await cacheError { _ = try await fixture.cache.response(for: request) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .cannotDecodeContentData)
        #expect(!HTTPCacheConfiguration.isConnectionError(underlying))
        #expect(fixture.cache.storedResponseCount == 0)
    }
    #endif
}
