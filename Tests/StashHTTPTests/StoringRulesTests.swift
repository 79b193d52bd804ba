import Foundation
import Testing
@testable import StashHTTP

@Suite("What is stored (RFC 9111 §3) and invalidated (§4.4)")
struct StoringRulesTests {
    /// Requests `url` twice with `max-stale` accepted and tells whether the second came from the store.
    private func isStored(status: Int, headers: HTTPHeaders = [:], method: String = "GET", requestHeaders: [String: String] = [:]) async throws -> Bool {
        let fixture = try CacheFixture()
        fixture.transport.respond(status, headers: headers, body: "x")
        let options = HTTPRequestOptions(policy: .cacheOnly)
        _ = try await fixture.cache.response(for: request(method: method, headers: requestHeaders))
        do {
            _ = try await fixture.cache.response(for: request(method: method), options: options)
            return true
        } catch HTTPCacheError.notCached {
            return false
        }
    }

    @Test("statuses cacheable by default are stored without explicit freshness", arguments: [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501])
    func defaultCacheableStatuses(status: Int) async throws {
        #expect(try await isStored(status: status))
    }

    @Test("other statuses are stored only with explicit freshness", arguments: [302, 307, 400, 403, 500, 503])
    func otherStatuses(status: Int) async throws {
        #expect(try await !isStored(status: status))
        #expect(try await isStored(status: status, headers: ["Cache-Control": "max-age=60"]))
    }

    @Test("a 206 without a Content-Range of known length, and a 304 without a conditional request, are never stored")
    func partialAndNotModified() async throws {
        #expect(try await !isStored(status: 206, headers: ["Cache-Control": "max-age=60"]))
        #expect(try await !isStored(status: 206, headers: ["Cache-Control": "max-age=60", "Content-Range": "bytes 0-0/*"]))
        #expect(try await !isStored(status: 304, headers: ["Cache-Control": "max-age=60"]))
    }

    @Test("no-store in the response or the request prevents storing")
    func noStore() async throws {
        #expect(try await !isStored(status: 200, headers: ["Cache-Control": "no-store, max-age=60"]))
        #expect(try await !isStored(status: 200, requestHeaders: ["Cache-Control": "no-store"]))
    }

    @Test("Vary: * is never stored")
    func varyStar() async throws {
        #expect(try await !isStored(status: 200, headers: ["Vary": "Accept, *"]))
    }

    @Test("private responses are stored, as this is a private cache")
    func privateIsStored() async throws {
        #expect(try await isStored(status: 200, headers: ["Cache-Control": "private, max-age=60"]))
    }

    @Test("HEAD responses are stored apart from GET responses")
    func headStoredApart() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"])
        _ = try await fixture.cache.response(for: request(method: "HEAD"))
        #expect(try await fixture.cache.response(for: request(method: "HEAD")).source.isCache)
        #expect(try await fixture.cache.response(for: request()).source.isNetwork)
    }

    @Test("POST, PUT, PATCH and DELETE are not stored", arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func unsafeMethodsNotStored(method: String) async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"])
        #expect(try await fixture.cache.response(for: request(method: method)).source.isNetwork)
        #expect(try await fixture.cache.response(for: request(method: method)).source.isNetwork)
        #expect(fixture.cache.storedResponseCount == 0)
    }

    @Test("a successful unsafe request invalidates every stored response for its URL", arguments: ["POST", "PUT", "PATCH", "DELETE"])
    func unsafeMethodsInvalidate(method: String) async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "list")
        _ = try await fixture.cache.response(for: request())
        _ = try await fixture.cache.response(for: request(method: "HEAD"))
        let other = URL(string: "https://api.example.com/other")!
        _ = try await fixture.cache.response(for: other)
        fixture.transport.respond(201)
        _ = try await fixture.cache.response(for: request(method: method))
        #expect(try await fixture.cache.response(for: request()).source.isNetwork)
        #expect(try await fixture.cache.response(for: other).source.isCache)
    }

    @Test("an unsafe request that fails does not invalidate")
    func failedUnsafeRequestKeepsEntry() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "list")
        _ = try await fixture.cache.response(for: request())
        fixture.transport.respond(500)
        _ = try await fixture.cache.response(for: request(method: "POST"))
        #expect(try await fixture.cache.response(for: request()).source.isCache)
    }

    @Test("an unsafe request also invalidates its Location on the same origin, not on another")
    func locationInvalidated() async throws {
        let fixture = try CacheFixture()
        let item = URL(string: "https://api.example.com/todos/7")!
        let foreign = URL(string: "https://cdn.example.net/todos/7")!
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"])
        _ = try await fixture.cache.response(for: item)
        _ = try await fixture.cache.response(for: foreign)
        fixture.transport.respond { request in
            HTTPTransportResponse(statusCode: 201, headers: ["Location": "/todos/7", "Content-Location": "https://cdn.example.net/todos/7"])
        }
        _ = try await fixture.cache.response(for: request(method: "POST"))
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"])
        #expect(try await fixture.cache.response(for: item).source.isNetwork)
        #expect(try await fixture.cache.response(for: foreign).source.isCache)
    }

    @Test("a no-store answer removes the response stored before")
    func noStoreReplacesStored() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["ETag": "\"1\""], body: "old")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.transport.respond(headers: ["Cache-Control": "no-store"], body: "secret")
        _ = try await fixture.cache.response(for: exampleURL)
        #expect(fixture.cache.storedResponseCount == 0)
    }

    @Test("namespaces keep one environment's responses from another")
    func namespacesSeparate() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "production")
        _ = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(namespace: "prod"))
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "staging")
        let staging = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(namespace: "staging"))
        #expect(staging.source.isNetwork)
        #expect(staging.text == "staging")
        #expect(try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(namespace: "prod")).text == "production")
    }

    @Test("one page's response is never served for another")
    func queriesSeparate() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond { request in
            HTTPTransportResponse(statusCode: 200, headers: ["Cache-Control": "max-age=600"], body: Data((request.url?.query ?? "").utf8))
        }
        let page1 = URL(string: "https://api.example.com/todos?page=1")!
        let page2 = URL(string: "https://api.example.com/todos?page=2")!
        #expect(try await fixture.cache.response(for: page1).text == "page=1")
        #expect(try await fixture.cache.response(for: page2).text == "page=2")
        #expect(try await fixture.cache.response(for: page1).source.isCache)
    }
}
