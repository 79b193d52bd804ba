import Foundation
import Testing
@testable import StashHTTP

/// Times past 2^31 seconds: dates from 2038-01-19 on and delta-seconds at RFC 9111's 2^31 cap. They
/// are computed in 64 bits, so they hold where `Int` has 32 bits (Apple Watch); here, on Linux, the
/// tests check the values at and beyond those boundaries.
@Suite("64-bit times and sizes in HTTP (dates after 2038, delta-seconds at 2^31, ranges past 4 GiB)")
struct SixtyFourBitTimeTests {
    // MARK: HTTP dates after 2038

    @Test("dates at and after 2^31 seconds since 1970 parse in all three forms", arguments: [
        ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648.0),
        ("Tuesday, 19-Jan-38 03:14:08 GMT", 2_147_483_648.0),
        ("Tue Jan 19 03:14:08 2038", 2_147_483_648.0),
        ("Sun, 07 Feb 2106 06:28:16 GMT", 4_294_967_296.0), // past 2^32 too
        ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799.0),
    ])
    func datesAfter2038Parse(text: String, seconds: TimeInterval) {
        #expect(HTTPDate.parse(text, relativeTo: Date(timeIntervalSince1970: 1_800_000_000)) == Date(timeIntervalSince1970: seconds))
    }

    @Test("dates after 2038 format as IMF-fixdate and parse back exactly", arguments: [
        2_147_483_647.0, 2_147_483_648.0, 2_214_216_000.0, 4_294_967_296.0, 253_402_300_799.0,
    ])
    func datesAfter2038RoundTrip(seconds: TimeInterval) throws {
        let date = Date(timeIntervalSince1970: seconds)
        let text = HTTPDate.string(from: date)
        #expect(text.count == 29)
        #expect(try #require(HTTPDate.parse(text)) == date)
    }

    @Test("the weekday and fields are right past 2038")
    func formattedFieldsAfter2038() {
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: 2_147_483_648)) == "Tue, 19 Jan 2038 03:14:08 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: 2_214_216_000)) == "Thu, 01 Mar 2040 12:00:00 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: 4_102_444_800)) == "Fri, 01 Jan 2100 00:00:00 GMT")
    }

    @Test("a date IMF-fixdate cannot spell is written as the nearest it can, never a trap")
    func unformattableDatesClamp() {
        #expect(HTTPDate.string(from: .distantFuture) == "Mon, 01 Jan 4001 00:00:00 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: 1e300)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: -1e300)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: .nan)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.string(from: Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 GMT")
    }

    @Test("an Expires after 2038 gives a lifetime counted in 64 bits")
    func expiresAfter2038() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let response = StoredResponse(url: exampleURL, method: "GET", namespace: "", statusCode: 200,
                                      headers: ["Date": HTTPDate.string(from: now), "Expires": "Sun, 07 Feb 2106 06:28:16 GMT"],
                                      body: Data(), requestTime: now, responseTime: now)
        #expect(Freshness.lifetime(of: response, heuristics: .disabled) == 4_294_967_296 - 1_800_000_000)
    }

    // MARK: Delta-seconds at 2^31

    @Test("max-age at, above and far above 2^31 is read as 2^31; just below it is exact", arguments: [
        ("2147483647", 2_147_483_647.0), ("2147483648", 2_147_483_648.0), ("2147483649", 2_147_483_648.0),
        ("4294967296", 2_147_483_648.0), ("99999999999999999999999999999", 2_147_483_648.0), ("000000000000000000042", 42.0),
    ])
    func maxAgeAbove2To31(text: String, seconds: TimeInterval) {
        #expect(CacheControl("max-age=\(text)").maxAge == seconds)
        #expect(CacheControl("stale-if-error=\(text)").staleIfError == seconds)
        #expect(Freshness.ageValue(["Age": text]) == seconds)
    }

    @Test("a delta-seconds value is digits only", arguments: ["+5", "-5", "", " 5", "5 s", "0x10", "1e3", "٣"])
    func deltaSecondsAreDigitsOnly(text: String) {
        #expect(DeltaSeconds.parse(text) == nil)
    }

    @Test("a max-age of 2^31 keeps a response fresh for 68 years and stale after")
    func freshnessAt2To31() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let response = StoredResponse(url: exampleURL, method: "GET", namespace: "", statusCode: 200,
                                      headers: ["Cache-Control": "max-age=9999999999"], body: Data(), requestTime: now, responseTime: now)
        let heuristics = HeuristicFreshness()
        #expect(Freshness(of: response, at: now + 2_147_483_647, heuristics: heuristics).isFresh)
        #expect(!Freshness(of: response, at: now + 2_147_483_648, heuristics: heuristics).isFresh)
    }

    @Test("the Age a cache sends is capped at 2^31, whole seconds, never negative")
    func ageFieldAt2To31() {
        #expect(Freshness.ageField(2_147_483_647.9) == "2147483647")
        #expect(Freshness.ageField(2_147_483_648) == "2147483648")
        #expect(Freshness.ageField(1e15) == "2147483648")
        #expect(Freshness.ageField(.infinity) == "2147483648")
        #expect(Freshness.ageField(-5) == "0")
        #expect(Freshness.ageField(.nan) == "0")
    }

    @Test("a Stash-Cache age past 2^31 seconds is kept and round-trips")
    func cacheStatusAgeAbove2To31() {
        let status = HTTPCacheStatus(source: .stale, age: 4_294_967_296 + 7, staleReason: "offline")
        #expect(status.headerValue == #"stale; age=4294967303; error="offline""#)
        #expect(HTTPCacheStatus(headerValue: status.headerValue) == status)
        #expect(HTTPCacheStatus.wholeSeconds(3e9) == 3_000_000_000)
        #expect(HTTPCacheStatus.wholeSeconds(1e30) == .max)
        #expect(HTTPCacheStatus.wholeSeconds(.nan) == 0)
    }

    // MARK: Sizes past 2 GiB

    @Test("byte ranges past 4 GiB parse and resolve against a stored body in 64 bits")
    func rangesPastFourGiB() {
        #expect(ByteRangeSpec(rangeField: "bytes=4294967296-4294967299") == .from(first: 4_294_967_296, last: 4_294_967_299))
        #expect(ByteRangeSpec(rangeField: "bytes=4294967296-")?.resolved(length: 1000) == nil) // past the end: 416
        #expect(ByteRangeSpec(rangeField: "bytes=-4294967296")?.resolved(length: 1000) == 0...999) // the whole body
        #expect(ByteRangeSpec(rangeField: "bytes=10-4294967296")?.resolved(length: 1000) == 10...999)
    }

    @Test("a stored response announcing a header past 2 GiB is truncated, not a trap")
    func hugeAnnouncedHeaderIsTruncated() {
        let bytes = Data([0x53, 0x48, 0x52, 0x31, 0xFF, 0xFF, 0xFF, 0xFF]) + Data("{}".utf8)
        #expect(throws: StoredResponseFormatError.truncated) { try StoredResponse.transformer.fromData(bytes) }
    }
}
