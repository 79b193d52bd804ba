import Foundation
import Testing
@testable import StashHTTP

@Suite("HTTPCacheStatus: the Stash-Cache header field")
struct HTTPCacheStatusTests {
    @Test("every status survives writing and reading the field", arguments: [
        HTTPCacheStatus(source: .network, age: 0),
        HTTPCacheStatus(source: .cache, age: 42),
        HTTPCacheStatus(source: .revalidated, age: 3),
        HTTPCacheStatus(source: .stale, age: 600, staleReason: "Could not connect to the server."),
        HTTPCacheStatus(source: .stale, age: 1, staleReason: #"a "quoted" \ reason, with; separators=1"#),
        HTTPCacheStatus(source: .stale, age: 1, staleReason: "déconnecté"),
    ])
    func roundTrip(status: HTTPCacheStatus) {
        #expect(HTTPCacheStatus(headerValue: status.headerValue) == status)
    }

    @Test("the field reads as documented")
    func format() {
        #expect(HTTPCacheStatus(source: .cache, age: 42).headerValue == "cache; age=42")
        #expect(HTTPCacheStatus(source: .stale, age: 600, staleReason: #"say "hi""#).headerValue == #"stale; age=600; error="say \"hi\"""#)
        #expect(HTTPCacheStatus(source: .stale, age: 0, staleReason: "two\r\nlines").headerValue == #"stale; age=0; error="two lines""#)
    }

    @Test("values that are not a status are refused", arguments: ["", "fresh; age=1", "cache; age=x", "cache; age=1 junk", #"stale; error="open"#])
    func refused(value: String) {
        #expect(HTTPCacheStatus(headerValue: value) == nil)
    }

    @Test("unknown parameters are skipped")
    func unknownParameters() {
        #expect(HTTPCacheStatus(headerValue: #"cache; age=5; hint="x"; key=abc"#) == HTTPCacheStatus(source: .cache, age: 5))
    }

    @Test("a stale response's status carries its error's description")
    func fromCachedResponse() {
        let response = CachedResponse(source: .stale(because: URLError(.timedOut)), url: exampleURL, statusCode: 200,
                                      headers: [:], body: Data(), age: 90.7, freshnessLifetime: 60, servedAt: Date())
        #expect(HTTPCacheStatus(response) == HTTPCacheStatus(source: .stale, age: 90, staleReason: URLError(.timedOut).localizedDescription))
    }
}
