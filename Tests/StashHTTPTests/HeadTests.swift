import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// HEAD answered from a stored GET response, and a HEAD response freshening it (RFC 9111 §4, §4.3.5).
@Suite("HEAD and the stored GET response")
struct HeadTests {
    @Test("a HEAD is answered with the header fields of a fresh stored GET response, without the body")
    func headFromStoredGET() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=600"), ("Content-Type", "text/plain"), ("ETag", "\"d1\"")], body: "document")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 5)
        let head = try await fixture.cache.response(for: fixture.request("/doc", method: "HEAD"))
        #expect(head.source.isCache)
        #expect(head.statusCode == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["content-type"] == "text/plain")
        #expect(head.headers["etag"] == "\"d1\"")
        #expect(head.headers["age"] == "5")
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("a stale stored GET response is not used for a HEAD, which goes to the server")
    func staleGETNotUsed() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d1\"")], body: "document")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 120)
        let head = try await fixture.cache.response(for: fixture.request("/doc", method: "HEAD"))
        #expect(head.source.isNetwork)
        #expect(fixture.server.lastRequest("/doc")?.method == "HEAD")
    }

    @Test("offline, a HEAD is answered with the header fields of the stale stored GET response")
    func headOffline() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d1\"")], body: "document")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 600)
        fixture.server.stop()
        let head = try await fixture.cache.response(for: fixture.request("/doc", method: "HEAD"))
        #expect(head.source.isStale)
        #expect(head.body.isEmpty)
        #expect(head.headers["etag"] == "\"d1\"")
        #expect(head.headers["age"] == "600")
    }

    @Test("a HEAD response with the stored validators freshens the stored GET response")
    func headFreshensGET() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d1\""), ("X-Version", "1")], body: "document")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 120)
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d1\""), ("X-Version", "2")], body: "document")
        _ = try await fixture.cache.response(for: fixture.request("/doc", method: "HEAD"))
        let get = try await fixture.cache.response(for: fixture.url("/doc"))
        #expect(get.source.isCache)
        #expect(get.text == "document")
        #expect(get.headers["x-version"] == "2")
        #expect(fixture.server.requestCount("/doc") == 2)
    }

    @Test("a HEAD response with another ETag invalidates the stored GET response")
    func headInvalidatesGET() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d1\"")], body: "document")
        _ = try await fixture.cache.response(for: fixture.url("/doc"))
        fixture.clock.advance(by: 120)
        fixture.server.route("/doc", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"d2\"")], body: "new document")
        _ = try await fixture.cache.response(for: fixture.request("/doc", method: "HEAD"))
        fixture.server.stop()
        // Nothing stored for GET any more: offline, there is nothing to fall back on.
        let error = await cacheError { _ = try await fixture.cache.response(for: fixture.url("/doc")) }
        guard case .network = error else { Issue.record("got \(String(describing: error))"); return }
    }
}
