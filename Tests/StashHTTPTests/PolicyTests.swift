import Foundation
import Testing
@testable import StashHTTP

@Suite("Request policies and overrides")
struct PolicyTests {
    /// A fixture holding one stored response that went stale 10 seconds ago (max-age=60, age 70).
    private func staleFixture(_ name: String = #function, cacheControl: String = "max-age=60") async throws -> CacheFixture {
        let fixture = try CacheFixture(name: name)
        fixture.transport.respond(headers: ["Cache-Control": cacheControl, "ETag": "\"v1\""], body: "stored")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 70)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60", "ETag": "\"v2\""], body: "fresh from server")
        return fixture
    }

    @Test("returnCacheElseLoad serves a stale stored response without asking")
    func returnCacheElseLoadUsesStale() async throws {
        let fixture = try await staleFixture()
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .returnCacheElseLoad))
        #expect(response.text == "stored")
        #expect(!response.isFresh)
        #expect(response.source.staleReason as? HTTPCacheError != nil)
        #expect(fixture.transport.requestCount == 1)
    }

    @Test("returnCacheElseLoad loads when nothing is stored")
    func returnCacheElseLoadLoads() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(body: "loaded")
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .returnCacheElseLoad))
        #expect(response.source.isNetwork)
    }

    @Test("cacheOnly serves what is stored and throws notCached otherwise, never asking the network")
    func cacheOnly() async throws {
        let fixture = try await staleFixture()
        let options = HTTPRequestOptions(policy: .cacheOnly)
        #expect(try await fixture.cache.response(for: exampleURL, options: options).text == "stored")
        let missing = URL(string: "https://api.example.com/missing")!
        let error = await cacheError { _ = try await fixture.cache.response(for: missing, options: options) }
        guard case .notCached(let url) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(url == missing)
        #expect(fixture.transport.requestCount == 1)
    }

    @Test("only-if-cached in the request means cacheOnly")
    func onlyIfCached() async throws {
        let fixture = try CacheFixture()
        let error = await cacheError { _ = try await fixture.cache.response(for: request(headers: ["Cache-Control": "only-if-cached"])) }
        guard case .notCached = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(fixture.transport.requestCount == 0)
    }

    @Test("reload ignores a fresh stored response, sends no validators, and stores the new one")
    func reload() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\""], body: "old")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600", "ETag": "\"v2\""], body: "new")
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .reload))
        #expect(response.source.isNetwork)
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-None-Match") == nil)
        #expect(try await fixture.cache.response(for: exampleURL).text == "new")
    }

    @Test("reload does not fall back to the stored response when offline")
    func reloadOffline() async throws {
        let fixture = try await staleFixture()
        fixture.transport.goOffline()
        let error = await cacheError { _ = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .reload)) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("revalidate asks the server even while the stored response is fresh")
    func forceRevalidate() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\""], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.transport.respond(304, headers: ["ETag": "\"v1\""])
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .revalidate))
        #expect(response.source.isRevalidated)
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
    }

    @Test("request no-cache, max-age=0 and Pragma: no-cache revalidate a fresh response",
          arguments: [["Cache-Control": "no-cache"], ["Cache-Control": "max-age=0"], ["Pragma": "no-cache"]])
    func requestDirectivesRevalidate(headers: [String: String]) async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600", "ETag": "\"v1\""], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.transport.respond(304, headers: ["ETag": "\"v1\""])
        #expect(try await fixture.cache.response(for: request(headers: headers)).source.isRevalidated)
    }

    @Test("request min-fresh asks for more remaining freshness than the response has")
    func minFresh() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 550)
        #expect(try await fixture.cache.response(for: request(headers: ["Cache-Control": "min-fresh=30"])).source.isCache)
        #expect(try await fixture.cache.response(for: request(headers: ["Cache-Control": "min-fresh=60"])).source.isNetwork)
    }

    @Test("maxStale accepts a response stale by up to that many seconds without asking")
    func maxStale() async throws {
        let fixture = try await staleFixture()
        let accepted = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(maxStale: 15))
        guard case .stale(let reason) = accepted.source, case .staleAccepted = reason as? HTTPCacheError else {
            Issue.record("got \(accepted.source)"); return
        }
        #expect(accepted.text == "stored")
        let tooStale = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(maxStale: 5))
        #expect(tooStale.source.isNetwork)
    }

    @Test("maxStale never serves a must-revalidate response stale")
    func maxStaleAndMustRevalidate() async throws {
        let fixture = try await staleFixture(cacheControl: "max-age=60, must-revalidate")
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(maxStale: 600))
        #expect(response.source.isNetwork)
    }

    @Test("a time to live replaces the server's freshness and stores even a no-store response")
    func timeToLive() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "no-store, max-age=0"], body: "kept anyway")
        let options = HTTPRequestOptions(timeToLive: 300)
        _ = try await fixture.cache.response(for: exampleURL, options: options)
        fixture.clock.advance(by: 299)
        let cached = try await fixture.cache.response(for: exampleURL)
        #expect(cached.source.isCache)
        #expect(cached.freshnessLifetime == 300)
        fixture.clock.advance(by: 2)
        #expect(try await fixture.cache.response(for: exampleURL, options: options).source.isNetwork)
    }

    @Test("a time to live on a read overrides the lifetime stored with the response")
    func timeToLiveOnRead() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10"], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 100)
        #expect(try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(timeToLive: 3600)).source.isCache)
    }
}
