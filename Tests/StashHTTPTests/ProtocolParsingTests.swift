import Foundation
import Testing
@testable import StashHTTP

@Suite("HTTP dates and Cache-Control parsing")
struct ProtocolParsingTests {
    // MARK: HTTP dates (RFC 9110 §5.6.7)

    @Test("the three HTTP date formats parse to the same instant", arguments: [
        "Sun, 06 Nov 1994 08:49:37 GMT",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
    ])
    func httpDateFormats(text: String) {
        #expect(HTTPDate.parse(text) == Date(timeIntervalSince1970: 784_111_777))
    }

    @Test("malformed or non-GMT dates are rejected", arguments: ["0", "-1", "", "yesterday", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT"])
    func invalidDates(text: String) {
        #expect(HTTPDate.parse(text) == nil)
    }

    @Test("formatting gives IMF-fixdate, which parses back exactly")
    func formattingRoundTrips() {
        let date = Date(timeIntervalSince1970: 784_111_777)
        #expect(HTTPDate.string(from: date) == "Sun, 06 Nov 1994 08:49:37 GMT")
        let later = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(HTTPDate.parse(HTTPDate.string(from: later)) == later)
    }

    @Test("month names parse whatever the process locale, as they are matched literally")
    func monthNamesAreNotLocalized() {
        #expect(HTTPDate.parse("Tue, 15 Jul 2025 10:00:00 GMT") == Date(timeIntervalSince1970: 1_752_573_600))
    }

    // MARK: Cache-Control (RFC 9111 §5.2)

    @Test("directives are case-insensitive and arguments may be quoted")
    func directives() {
        let control = CacheControl(#"Max-Age=60, MUST-REVALIDATE, no-cache="Set-Cookie, X-Token", stale-if-error=300"#)
        #expect(control.maxAge == 60)
        #expect(control.mustRevalidate)
        #expect(control.noCache)
        #expect(control.directives["no-cache"] == .some("Set-Cookie, X-Token"))
        #expect(control.staleIfError == 300)
    }

    @Test("the first of duplicated directives counts and invalid seconds are ignored")
    func duplicatesAndInvalidValues() {
        #expect(CacheControl("max-age=10, max-age=99").maxAge == 10)
        #expect(CacheControl("max-age=soon").maxAge == nil)
        #expect(CacheControl("max-age=-5").maxAge == nil)
        #expect(CacheControl(nil).directives.isEmpty)
    }

    @Test("max-stale without an argument accepts any staleness")
    func maxStaleWithoutArgument() {
        #expect(CacheControl("max-stale").maxStale == .infinity)
        #expect(CacheControl("max-stale=30").maxStale == 30)
        #expect(CacheControl("no-store").maxStale == nil)
    }

    // MARK: Header fields

    @Test("header names are case-insensitive and repeated fields are joined")
    func headerFields() {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        headers.append("a", forName: "Vary")
        headers.append("b", forName: "VARY")
        #expect(headers["content-type"] == "application/json")
        #expect(headers["vary"] == "a, b")
        #expect(headers.listMembers("Vary") == ["a", "b"])
    }

    @Test("hop-by-hop fields are not stored and a 304 updates all but Content-Length")
    func storedFields() {
        let received: HTTPHeaders = ["Connection": "close, X-Trace", "X-Trace": "1", "Keep-Alive": "5", "ETag": "\"a\"", "Content-Length": "10"]
        let stored = received.removingHopByHopFields()
        #expect(stored.fields == ["etag": "\"a\"", "content-length": "10"])
        let updated = stored.updated(with: ["ETag": "\"b\"", "Content-Length": "0", "Cache-Control": "max-age=5"])
        #expect(updated.fields == ["etag": "\"b\"", "content-length": "10", "cache-control": "max-age=5"])
    }
}
