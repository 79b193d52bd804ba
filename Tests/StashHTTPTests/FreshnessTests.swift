import Foundation
import Testing
@testable import StashHTTP

@Suite("Freshness (RFC 9111 §4.2)")
struct FreshnessTests {
    private let start = Date(timeIntervalSince1970: 1_800_000_000)

    private func stored(_ headers: HTTPHeaders, url: URL = exampleURL, status: Int = 200,
                        requestTime: Date? = nil, responseTime: Date? = nil) -> StoredResponse {
        StoredResponse(url: url, method: "GET", namespace: "", statusCode: status, headers: headers, body: Data(),
                       requestTime: requestTime ?? start, responseTime: responseTime ?? start)
    }

    private func freshness(_ response: StoredResponse, after seconds: TimeInterval,
                           heuristics: HeuristicFreshness = HeuristicFreshness()) -> Freshness {
        Freshness(of: response, at: start.addingTimeInterval(seconds), heuristics: heuristics)
    }

    @Test("max-age gives the lifetime and s-maxage, meant for shared caches, is ignored")
    func maxAge() {
        let response = stored(["Cache-Control": "s-maxage=600, max-age=60"])
        #expect(freshness(response, after: 59).isFresh)
        #expect(!freshness(response, after: 60).isFresh)
        #expect(Freshness.lifetime(of: stored(["Cache-Control": "s-maxage=600"]), heuristics: .disabled) == 0)
    }

    @Test("max-age wins over Expires")
    func maxAgeOverExpires() {
        let response = stored(["Cache-Control": "max-age=10", "Expires": HTTPDate.string(from: start + 3600)])
        #expect(Freshness.lifetime(of: response, heuristics: .disabled) == 10)
    }

    @Test("Expires counts from the Date header, not from the local clock")
    func expiresMinusDate() {
        // The server's clock runs an hour behind ours: Expires - Date is still 5 minutes.
        let response = stored(["Date": HTTPDate.string(from: start - 3600), "Expires": HTTPDate.string(from: start - 3300)])
        #expect(Freshness.lifetime(of: response, heuristics: .disabled) == 300)
    }

    @Test("an invalid Expires such as 0 means already expired")
    func invalidExpires() {
        #expect(Freshness.lifetime(of: stored(["Expires": "0", "Last-Modified": HTTPDate.string(from: start - 86_400)]),
                                   heuristics: HeuristicFreshness()) == 0)
    }

    @Test("the Age header and the round trip count towards the age")
    func ageHeaderAndResponseDelay() {
        let response = stored(["Age": "100", "Date": HTTPDate.string(from: start)],
                              requestTime: start - 2, responseTime: start)
        // corrected_age_value = 100 + 2 (response_delay); resident 10.
        #expect(freshness(response, after: 10).currentAge == 112)
    }

    @Test("a Date in the past gives an apparent age")
    func apparentAge() {
        let response = stored(["Date": HTTPDate.string(from: start - 50)])
        #expect(freshness(response, after: 0).currentAge == 50)
        #expect(freshness(stored(["Date": HTTPDate.string(from: start + 50)]), after: 0).currentAge == 0)
    }

    @Test("heuristic freshness is 10% of the time since Last-Modified")
    func heuristicFraction() {
        let response = stored(["Date": HTTPDate.string(from: start), "Last-Modified": HTTPDate.string(from: start - 10_000)])
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness()) == 1000)
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness(fraction: 0.2)) == 2000)
        #expect(Freshness.lifetime(of: response, heuristics: .disabled) == 0)
    }

    @Test("heuristic freshness is capped")
    func heuristicCap() {
        let response = stored(["Last-Modified": HTTPDate.string(from: start - 365 * 86_400)])
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness()) == 86_400)
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness(maximumLifetime: 600)) == 600)
    }

    @Test("no heuristic freshness for URLs with a query, unless configured")
    func heuristicQuery() {
        let response = stored(["Last-Modified": HTTPDate.string(from: start - 10_000)], url: URL(string: "https://e.com/s?q=1")!)
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness()) == 0)
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness(appliesToURLsWithQuery: true)) == 1000)
    }

    @Test("no heuristic freshness for a status that is not cacheable by default")
    func heuristicStatus() {
        let response = stored(["Last-Modified": HTTPDate.string(from: start - 10_000)], status: 302)
        #expect(Freshness.lifetime(of: response, heuristics: HeuristicFreshness()) == 0)
    }

    @Test("a stored time to live replaces the server's lifetime")
    func storedOverride() {
        var response = stored(["Cache-Control": "max-age=5"])
        response.freshnessLifetimeOverride = 3600
        #expect(freshness(response, after: 600).isFresh)
        #expect(Freshness(of: response, at: start + 600, heuristics: HeuristicFreshness(), lifetimeOverride: 60).isFresh == false)
    }

    // MARK: Through the cache, with the clock moved instead of sleeping

    @Test("a fresh response is served from the cache until max-age, then asked again")
    func servedWhileFresh() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: "v1")
        #expect(try await fixture.cache.response(for: exampleURL).source.isNetwork)
        fixture.clock.advance(by: 59)
        let cached = try await fixture.cache.response(for: exampleURL)
        #expect(cached.source.isCache)
        #expect(cached.age == 59)
        #expect(cached.freshnessLifetime == 60)
        #expect(cached.isFresh)
        #expect(cached.text == "v1")
        fixture.clock.advance(by: 1)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: "v2")
        let reloaded = try await fixture.cache.response(for: exampleURL)
        #expect(reloaded.source.isNetwork)
        #expect(reloaded.text == "v2")
        #expect(fixture.transport.requestCount == 2)
    }

    @Test("an immutable fresh response is not revalidated even when the policy asks to")
    func immutable() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600, immutable", "ETag": "\"x\""], body: "app.js")
        _ = try await fixture.cache.response(for: exampleURL)
        let again = try await fixture.cache.response(for: exampleURL, options: HTTPRequestOptions(policy: .revalidate))
        #expect(again.source.isCache)
        #expect(fixture.transport.requestCount == 1)
    }

    @Test("a response that is fresh stays fresh across a restart of the cache")
    func freshAfterReopen() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: "kept")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: 30)
        let reopened = try fixture.reopened()
        let response = try await reopened.response(for: exampleURL)
        #expect(response.source.isCache)
        #expect(response.age == 30)
    }
}
