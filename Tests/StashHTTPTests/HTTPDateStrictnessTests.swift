import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// RFC 9110 §5.6.7 defines IMF-fixdate and two obsolete forms; anything else is no date, and an
/// `Expires` that is no date means "already expired" (RFC 9111 §5.3). The clock of the tests stands
/// at Fri, 15 Jan 2027 08:00:00 GMT; each shape below spells one hour later.
@Suite("Strict HTTP dates (RFC 9110 §5.6.7, RFC 9111 §5.3)")
struct HTTPDateStrictnessTests {
    static let malformed = [
        "Fri, 15 Jan 2027 09:00:00 UTC",   // UTC instead of GMT
        "Fri, 15 Jan 27 09:00:00 GMT",     // a two-digit year in IMF-fixdate
        "Fri 15 Jan 2027 09:00:00 GMT",    // no comma after the day name
        "Fri,  15 Jan 2027 09:00:00 GMT",  // a doubled space
        "Fri, 15 Jan  2027 09:00:00 GMT",  // a doubled space later on
        "Fri, 15-Jan-2027 09:00:00 GMT",   // dashes in IMF-fixdate
        "Fri, 15 Jan 2027 9:00:00 GMT",    // a one-digit hour
        "Fri, 15 Jan 2027 09.00.00 GMT",   // periods in the time
        "Fri, 15 jan 2027 09:00:00 GMT",   // a lower-case month
        "fri, 15 Jan 2027 09:00:00 GMT",   // a lower-case day name
        "Fri, 15 Jan 2027 09:00:00 gmt",   // a lower-case zone
        "Fri, 15 Jan 2027 09:00:00 +0000", // a numeric zone
        "Fri, 15 Jan 2027 09:00:00",       // no zone
        "2027-01-15T09:00:00Z",            // ISO 8601
        "Friday, 15 Jan 2027 09:00:00 GMT", // the long day name in IMF-fixdate
        "Fri, 15-Jan-27 09:00:00 GMT",     // the RFC 850 form with a short day name
        "Fri Jan 15 09:00:00 2027 GMT",    // asctime with a zone
        "Fri, 31 Feb 2027 09:00:00 GMT",   // a day the month does not have
    ]

    @Test("an Expires in a malformed shape means already expired", arguments: malformed)
    func malformedExpiresIsExpired(expires: String) async throws {
        #expect(HTTPDate.parse(expires) == nil)
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        fixture.server.route("/doc") { _ in .init(headers: [("Date", clock.httpDate()), ("Expires", expires)], body: "doc") }
        let first = try await fixture.cache.response(for: fixture.url("/doc"))
        #expect(first.freshnessLifetime == 0)
        #expect(try await fixture.cache.response(for: fixture.url("/doc")).source.isNetwork)
        #expect(fixture.server.requestCount("/doc") == 2)
    }

    @Test("an Expires in each of the three defined forms gives an hour of freshness", arguments: [
        "Fri, 15 Jan 2027 09:00:00 GMT",  // IMF-fixdate
        "Friday, 15-Jan-27 09:00:00 GMT", // RFC 850
        "Fri Jan 15 09:00:00 2027",       // asctime
    ])
    func validExpiresIsFresh(expires: String) async throws {
        let fixture = try LoopbackFixture()
        let clock = fixture.clock
        fixture.server.route("/doc") { _ in .init(headers: [("Date", clock.httpDate()), ("Expires", expires)], body: "doc") }
        #expect(try await fixture.cache.response(for: fixture.url("/doc")).freshnessLifetime == 3600)
        #expect(try await fixture.cache.response(for: fixture.url("/doc")).source.isCache)
        #expect(fixture.server.requestCount("/doc") == 1)
    }

    @Test("asctime pads a one-digit day with a space, and accepts a zero too")
    func asctimeDays() {
        let expected = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == expected)
        #expect(HTTPDate.parse("Sun Nov 06 08:49:37 1994") == expected)
        #expect(HTTPDate.parse("Sun Nov 6 08:49:37 1994") == nil)
    }

    @Test("a two-digit RFC 850 year more than 50 years ahead of the reference is in the past century")
    func twoDigitYears() {
        let reference = Date(timeIntervalSince1970: 1_800_000_000) // 2027
        #expect(HTTPDate.parse("Friday, 15-Jan-27 09:00:00 GMT", relativeTo: reference) == reference + 3600)
        // 2077 would be 50 years ahead: still this century; 2078 is more, so 1978.
        #expect(HTTPDate.parse("Friday, 15-Jan-77 09:00:00 GMT", relativeTo: reference).map(HTTPDate.string) == "Fri, 15 Jan 2077 09:00:00 GMT")
        #expect(HTTPDate.parse("Sunday, 15-Jan-78 09:00:00 GMT", relativeTo: reference).map(HTTPDate.string) == "Sun, 15 Jan 1978 09:00:00 GMT")
    }

    @Test("surrounding whitespace is not part of the date")
    func surroundingWhitespace() {
        #expect(HTTPDate.parse("  Sun, 06 Nov 1994 08:49:37 GMT ") == Date(timeIntervalSince1970: 784_111_777))
    }
}
