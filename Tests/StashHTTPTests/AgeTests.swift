import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// RFC 9111 §5.1: reading a list-valued `Age`, and generating `Age` on what is served from the store.
@Suite("Age (RFC 9111 §5.1)")
struct AgeTests {
    // MARK: Reading Age

    @Test("a list-valued Age counts by its first member, on one field line or two", arguments: [false, true])
    func listValuedAge(twoFieldLines: Bool) async throws {
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        let age: [(String, String)] = twoFieldLines ? [("Age", "7200"), ("Age", "0")] : [("Age", "7200, 0")]
        fixture.server.route("/old") { _ in
            .init(headers: [("Date", clock.httpDate()), ("Cache-Control", "max-age=3600")] + age, body: "two hours old")
        }
        let first = try await fixture.cache.response(for: fixture.url("/old"))
        #expect(first.age == 7200)
        #expect(!first.isFresh)
        // Two hours old with an hour of lifetime: stale, so the next request goes to the server.
        #expect(try await fixture.cache.response(for: fixture.url("/old")).source.isNetwork)
        #expect(fixture.server.requestCount("/old") == 2)
    }

    @Test("an Age that is not a non-negative integer is ignored", arguments: ["-5", "abc", "1.5", "", "7200x"])
    func invalidAgeIgnored(value: String) {
        #expect(Freshness.ageValue(["Age": value]) == 0)
    }

    @Test("an Age beyond 2^31 is capped there")
    func hugeAgeCapped() {
        #expect(Freshness.ageValue(["Age": "99999999999999999999"]) == 2_147_483_648)
        #expect(Freshness.ageValue(["Age": "0000000000000042"]) == 42)
    }

    // MARK: Generating Age

    @Test("a fresh response served from the store carries its current age, not the origin's Age")
    func ageOnCacheHit() async throws {
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        fixture.server.route("/aged") { _ in
            .init(headers: [("Date", clock.httpDate()), ("Age", "10"), ("Cache-Control", "max-age=600")], body: "x")
        }
        let first = try await fixture.cache.response(for: fixture.url("/aged"))
        #expect(first.headers["age"] == "10") // the network response is passed on as the origin sent it
        fixture.clock.advance(by: 30)
        let hit = try await fixture.cache.response(for: fixture.url("/aged"))
        #expect(hit.source.isCache)
        #expect(hit.headers["age"] == "40")
        // The store keeps the origin's Age, so the age keeps counting from it.
        fixture.clock.advance(by: 5)
        #expect(try await fixture.cache.response(for: fixture.url("/aged")).headers["age"] == "45")
    }

    @Test("a response freshened by a 304 carries the age the 304 gives it")
    func ageAfterRevalidation() async throws {
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        fixture.server.route("/etag") { request in
            if request.headers["if-none-match"] == "\"v1\"" {
                return .init(status: 304, headers: [("Date", clock.httpDate(offset: -3)), ("ETag", "\"v1\""), ("Cache-Control", "max-age=60")])
            }
            return .init(headers: [("Date", clock.httpDate()), ("Age", "50"), ("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: "v1")
        }
        _ = try await fixture.cache.response(for: fixture.url("/etag"))
        fixture.clock.advance(by: 20)
        let revalidated = try await fixture.cache.response(for: fixture.url("/etag"))
        #expect(revalidated.source.isRevalidated)
        #expect(revalidated.age == 3)
        #expect(revalidated.headers["age"] == "3")
    }

    @Test("a stale response served offline carries its current age and no Warning")
    func ageWhenStale() async throws {
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        fixture.server.route("/feed") { _ in .init(headers: [("Date", clock.httpDate()), ("Cache-Control", "max-age=60")], body: "feed") }
        _ = try await fixture.cache.response(for: fixture.url("/feed"))
        fixture.clock.advance(by: 7200)
        fixture.server.stop()
        let stale = try await fixture.cache.response(for: fixture.url("/feed"))
        #expect(stale.source.isStale)
        #expect(stale.headers["age"] == "7200")
        #expect(stale.headers["warning"] == nil) // RFC 9111 §5.5: Warning is obsolete, none is generated
    }
}
