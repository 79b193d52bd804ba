import Foundation
import Testing
@testable import StashHTTP

@Suite("Offline: serving stored responses when the network fails")
struct OfflineTests {
    /// One response stored with `cacheControl`, then the clock moved `age` seconds on.
    private func fixture(_ name: String = #function, cacheControl: String = "max-age=60", age: TimeInterval = 600,
                         configuration: HTTPCacheConfiguration = HTTPCacheConfiguration()) async throws -> CacheFixture {
        let fixture = try CacheFixture(configuration: configuration, name: name)
        fixture.transport.respond(headers: ["Cache-Control": cacheControl, "ETag": "\"v1\""], body: "last good")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: age)
        return fixture
    }

    @Test("a connection error serves the stale stored response with the error and its age")
    func connectionErrorServesStale() async throws {
        let fixture = try await fixture()
        fixture.transport.goOffline(URLError(.notConnectedToInternet))
        let response = try await fixture.cache.response(for: exampleURL)
        guard case .stale(let error) = response.source else { Issue.record("got \(response.source)"); return }
        #expect((error as? URLError)?.code == .notConnectedToInternet)
        #expect(response.text == "last good")
        #expect(response.age == 600)
        #expect(!response.isFresh)
        #expect(response.expiresAt == fixture.clock.now.addingTimeInterval(-540))
        #expect(fixture.cache.statistics.staleServed == 1)
    }

    @Test("every connection error code counts as offline", arguments: [URLError.Code.cannotConnectToHost, .timedOut, .networkConnectionLost, .cannotFindHost, .dnsLookupFailed])
    func connectionErrorCodes(code: URLError.Code) async throws {
        let fixture = try await fixture()
        fixture.transport.goOffline(URLError(code))
        #expect(try await fixture.cache.response(for: exampleURL).source.isStale)
    }

    @Test("cancellation is not offline: it is thrown, not covered by a stale response")
    func cancellationIsNotOffline() async throws {
        let fixture = try await fixture()
        fixture.transport.goOffline(URLError(.cancelled))
        let error = await cacheError { _ = try await fixture.cache.response(for: exampleURL) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .cancelled)
    }

    @Test("with nothing stored, a connection error is thrown with its cause")
    func nothingStored() async throws {
        let fixture = try CacheFixture()
        fixture.transport.goOffline()
        let error = await cacheError { _ = try await fixture.cache.response(for: exampleURL) }
        guard case .network(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("a 5xx serves the stored response, with the status as the reason")
    func serverErrorServesStale() async throws {
        let fixture = try await fixture()
        fixture.transport.respond(503, body: "down")
        let response = try await fixture.cache.response(for: exampleURL)
        guard case .stale(let reason) = response.source, case .serverError(let status) = reason as? HTTPCacheError else {
            Issue.record("got \(response.source)"); return
        }
        #expect(status == 503)
        #expect(response.text == "last good")
    }

    @Test("with serving stale on 5xx turned off, the 5xx comes back as it is")
    func serverErrorPassedOn() async throws {
        let fixture = try await fixture(configuration: HTTPCacheConfiguration(servesStaleOnServerError: false))
        fixture.transport.respond(500, body: "boom")
        let response = try await fixture.cache.response(for: exampleURL)
        #expect(response.source.isNetwork)
        #expect(response.statusCode == 500)
        #expect(try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .cacheOnly)).text == "last good")
    }

    @Test("must-revalidate forbids serving stale when offline")
    func mustRevalidateForbids() async throws {
        let fixture = try await fixture(cacheControl: "max-age=60, must-revalidate")
        fixture.transport.goOffline()
        let error = await cacheError { _ = try await fixture.cache.response(for: exampleURL) }
        guard case .staleNotAllowed(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect((underlying as? URLError)?.code == .cannotConnectToHost)
    }

    @Test("a must-revalidate response is not served stale after a 5xx: the 5xx is returned")
    func mustRevalidateOnServerError() async throws {
        let fixture = try await fixture(cacheControl: "max-age=60, must-revalidate")
        fixture.transport.respond(502)
        #expect(try await fixture.cache.response(for: exampleURL).statusCode == 502)
    }

    @Test("the must-revalidate rule can be overridden for offline-first apps")
    func mustRevalidateOverridden() async throws {
        let fixture = try await fixture(cacheControl: "no-cache", configuration: HTTPCacheConfiguration(servesStaleDespiteMustRevalidate: true))
        fixture.transport.goOffline()
        #expect(try await fixture.cache.response(for: exampleURL).source.isStale)
    }

    @Test("a staleness limit refuses responses that are too old")
    func stalenessLimit() async throws {
        let fixture = try await fixture(age: 600, configuration: HTTPCacheConfiguration(maxStalenessOnError: 300))
        fixture.transport.goOffline()
        let error = await cacheError { _ = try await fixture.cache.response(for: exampleURL) }
        guard case .staleNotAllowed = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test("stale-if-error allows a stale response within its window, even past must-revalidate (RFC 5861 §4)")
    func staleIfErrorWindow() async throws {
        let strict = HTTPCacheConfiguration(maxStalenessOnError: 0)
        let within = try await fixture(cacheControl: "max-age=60, must-revalidate, stale-if-error=120", age: 150, configuration: strict)
        within.transport.goOffline()
        #expect(try await within.cache.response(for: exampleURL).source.isStale)

        let beyond = try await fixture(cacheControl: "max-age=60, must-revalidate, stale-if-error=120", age: 200, configuration: strict)
        beyond.transport.goOffline()
        let error = await cacheError { _ = try await beyond.cache.response(for: exampleURL) }
        guard case .staleNotAllowed = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test("stale-if-error in the request works like the response's")
    func staleIfErrorInRequest() async throws {
        let fixture = try await fixture(age: 100, configuration: HTTPCacheConfiguration(maxStalenessOnError: 0))
        fixture.transport.goOffline()
        let response = try await fixture.cache.response(for: request(headers: ["Cache-Control": "stale-if-error=60"]))
        #expect(response.source.isStale)
    }

    @Test("a fresh response under forced revalidation is still served when offline, flagged with the error")
    func forcedRevalidationOffline() async throws {
        let fixture = try await fixture(cacheControl: "max-age=600", age: 10)
        fixture.transport.goOffline()
        let response = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .revalidate))
        #expect(response.source.isStale)
        #expect(response.isFresh)
    }

    @Test("offline, the stored response survives a restart of the app")
    func offlineAfterRestart() async throws {
        let fixture = try await fixture()
        fixture.transport.goOffline()
        let reopened = try fixture.reopened()
        let response = try await reopened.response(for: exampleURL)
        #expect(response.source.isStale)
        #expect(response.text == "last good")
    }
}
