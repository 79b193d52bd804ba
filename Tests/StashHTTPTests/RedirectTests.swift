import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Redirects followed by the cache, permanent ones stored and followed from the store.
@Suite("Redirects")
struct RedirectTests {
    @Test("a permanent redirect is stored and then followed from the store; each hop keeps its own freshness", arguments: [301, 308])
    func permanentRedirectStored(status: Int) async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/old", status: status, headers: [("Location", "/new"), ("Cache-Control", "max-age=3600")])
        fixture.server.route("/new", headers: [("Cache-Control", "max-age=60")], body: "new home")
        let first = try await fixture.cache.response(for: fixture.url("/old"))
        #expect(first.text == "new home")
        #expect(first.url == fixture.url("/new"))
        fixture.clock.advance(by: 120)
        let second = try await fixture.cache.response(for: fixture.url("/old"))
        #expect(second.text == "new home")
        #expect(fixture.server.requestCount("/old") == 1) // the redirect came from the store
        #expect(fixture.server.requestCount("/new") == 2) // the target was stale and asked again
    }

    @Test("offline, a stored redirect leads to the stored target")
    func offlineThroughStoredRedirect() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/old", status: 301, headers: [("Location", "/new")])
        fixture.server.route("/new", headers: [("Cache-Control", "max-age=60")], body: "new home")
        _ = try await fixture.cache.response(for: fixture.url("/old"))
        fixture.clock.advance(by: 3600)
        fixture.server.stop()
        let offline = try await fixture.cache.response(for: fixture.url("/old"))
        #expect(offline.text == "new home")
        #expect(offline.source.isStale)
    }

    @Test("a temporary redirect without freshness is asked again each time")
    func temporaryRedirectNotStored() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/temp", status: 302, headers: [("Location", "/target")])
        fixture.server.route("/target", headers: [("Cache-Control", "max-age=60")], body: "target")
        #expect(try await fixture.cache.response(for: fixture.url("/temp")).text == "target")
        #expect(try await fixture.cache.response(for: fixture.url("/temp")).source.isCache) // the target is fresh
        #expect(fixture.server.requestCount("/temp") == 2)
        #expect(fixture.server.requestCount("/target") == 1)
    }

    @Test("303 turns a POST into a GET; 307 keeps the method and body")
    func methods() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/see-other", status: 303, headers: [("Location", "/result")])
        fixture.server.route("/temporary", status: 307, headers: [("Location", "/result")])
        fixture.server.route("/result") { request in .init(headers: [("Cache-Control", "no-store")], body: "\(request.method) \(String(decoding: request.body, as: UTF8.self))") }
        var post = fixture.request("/see-other", method: "POST")
        post.httpBody = Data("form".utf8)
        #expect(try await fixture.cache.response(for: post).text == "GET ")
        post.url = fixture.url("/temporary")
        #expect(try await fixture.cache.response(for: post).text == "POST form")
    }

    @Test("a redirect loop ends with httpTooManyRedirects")
    func loop() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/loop", status: 302, headers: [("Location", "/loop")])
        let error = await cacheError { _ = try await fixture.cache.response(for: fixture.url("/loop")) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .httpTooManyRedirects)
    }

    @Test("with followsRedirects off, the redirect itself is returned")
    func notFollowed() async throws {
        var configuration = HTTPCacheConfiguration()
        configuration.followsRedirects = false
        let fixture = try LoopbackFixture(configuration: configuration)
        fixture.server.route("/old", status: 301, headers: [("Location", "/new")])
        let response = try await fixture.cache.response(for: fixture.url("/old"))
        #expect(response.statusCode == 301)
        #expect(response.headers["location"] == "/new")
        #expect(fixture.server.requestCount("/new") == 0)
    }

    @Test("credentials are not carried to another origin")
    func credentialsStayOnOrigin() throws {
        var original = request(URL(string: "https://api.example.com/a")!, headers: ["Authorization": "secret", "Accept": "json"])
        original.httpMethod = "GET"
        func redirect(to location: String) -> URLRequest? {
            let response = CachedResponse(source: .network, url: original.url!, statusCode: 301, headers: ["Location": location],
                                          body: Data(), age: 0, freshnessLifetime: 0, servedAt: Date(timeIntervalSince1970: 0))
            return HTTPCache.redirect(from: original, response)
        }
        #expect(redirect(to: "/b")?.value(forHTTPHeaderField: "Authorization") == "secret")
        let elsewhere = try #require(redirect(to: "https://other.example.com/b"))
        #expect(elsewhere.value(forHTTPHeaderField: "Authorization") == nil)
        #expect(elsewhere.value(forHTTPHeaderField: "Accept") == "json")
        #expect(redirect(to: "ftp://example.com/file") == nil)
    }
}
