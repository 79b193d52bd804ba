import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// `only-if-cached` with nothing stored (RFC 9111 §5.2.1.7).
@Suite("only-if-cached")
struct OnlyIfCachedTests {
    @Test("with nothing stored, only-if-cached throws notCached, which carries the RFC's 504, and never asks the server")
    func nothingStored() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60")], body: "doc")
        let error = await cacheError {
            _ = try await fixture.cache.response(for: fixture.request("/doc", headers: ["Cache-Control": "only-if-cached"]))
        }
        guard case .notCached(let url) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(url == fixture.url("/doc"))
        let answer = try #require(error?.equivalentResponse)
        #expect(answer.statusCode == 504)
        #expect(answer.body.isEmpty)
        #expect(fixture.server.requestCount("/doc") == 0)
    }

    @Test("a range request with only-if-cached and nothing stored is answered the same way")
    func rangeNothingStored() async throws {
        let fixture = try LoopbackFixture()
        let error = await cacheError {
            _ = try await fixture.cache.response(for: fixture.request("/doc", headers: ["Cache-Control": "only-if-cached", "Range": "bytes=0-1"]))
        }
        #expect(error?.equivalentResponse?.statusCode == 504)
        #expect(fixture.server.requestCount("/doc") == 0)
    }

    @Test("only-if-cached serves a fresh stored response, and a stale one only within max-stale")
    func storedServed() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60")], body: "doc")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 30)
        #expect(try await fixture.cache.response(for: fixture.request("/doc", headers: ["Cache-Control": "only-if-cached"])).source.isCache)
        fixture.clock.advance(by: 570) // 540 s stale
        let error = await cacheError {
            _ = try await fixture.cache.response(for: fixture.request("/doc", headers: ["Cache-Control": "only-if-cached"]))
        }
        #expect(error?.equivalentResponse?.statusCode == 504)
        let accepted = try await fixture.cache.response(for: fixture.request("/doc", headers: ["Cache-Control": "only-if-cached, max-stale=600"]))
        #expect(accepted.text == "doc")
        #expect(accepted.source.isStale)
        // The cacheOnly policy is the caller's explicit choice of any stored response.
        #expect(try await fixture.cache.response(for: fixture.url("/doc"), options: HTTPRequestOptions(policy: .cacheOnly)).source.isStale)
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("no other error has an equivalent response")
    func otherErrors() {
        #expect(HTTPCacheError.staleAccepted.equivalentResponse == nil)
        #expect(HTTPCacheError.network(underlying: URLError(.timedOut)).equivalentResponse == nil)
    }
}
