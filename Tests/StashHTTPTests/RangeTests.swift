import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// RFC 9111 §3.3–3.4 and RFC 9110 §14: ranges from stored responses, 206 parts stored and combined.
@Suite("Range requests and partial content")
struct RangeTests {
    static let digits = "0123456789"

    /// A server that honours one `bytes=first-last` range (and `If-Range` by strong ETag), as nginx does.
    /// With `honoursIfRange: false` it sends the range whatever `If-Range` says, as a broken server might.
    static func rangeServer(body: String, etag: String, honoursIfRange: Bool = true) -> LoopbackHTTPServer.Handler {
        { request in
            let common = [("ETag", etag), ("Cache-Control", "max-age=600")]
            let ifRangeMatches = !honoursIfRange || (request.headers["if-range"].map { $0 == etag } ?? true)
            guard let range = request.headers["range"], ifRangeMatches, range.hasPrefix("bytes="),
                  case let bounds = range.dropFirst(6).split(separator: "-"), bounds.count == 2,
                  let first = Int(bounds[0]), let last = Int(bounds[1]) else {
                return .init(headers: common, body: body)
            }
            let bytes = Array(body.utf8)[first...last]
            return .init(status: 206, headers: common + [("Content-Range", "bytes \(first)-\(last)/\(body.utf8.count)")],
                         body: String(decoding: bytes, as: UTF8.self))
        }
    }

    // MARK: Ranges from a stored complete response

    @Test("a range is cut from a stored complete response without asking the server", arguments: [
        ("bytes=2-5", "bytes 2-5/10", "2345"),
        ("bytes=7-", "bytes 7-9/10", "789"),
        ("bytes=-3", "bytes 7-9/10", "789"),
        ("bytes=8-20", "bytes 8-9/10", "89"),
    ])
    func rangeFromCompleteResponse(range: String, contentRange: String, body: String) async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=600")], body: Self.digits)
        _ = try await fixture.cache.response(for: fixture.url("/file"))
        fixture.clock.advance(by: 10)
        let partial = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": range]))
        #expect(partial.statusCode == 206)
        #expect(partial.source.isCache)
        #expect(partial.headers["content-range"] == contentRange)
        #expect(partial.headers["content-length"] == String(body.count))
        #expect(partial.headers["age"] == "10")
        #expect(partial.text == body)
        #expect(fixture.server.requestCount("/file") == 1)
    }

    @Test("a range that starts past the end gets a 416 with the complete length")
    func unsatisfiableRange() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", headers: [("Cache-Control", "max-age=600")], body: Self.digits)
        _ = try await fixture.cache.response(for: fixture.url("/file"))
        let answer = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=10-"]))
        #expect(answer.statusCode == 416)
        #expect(answer.headers["content-range"] == "bytes */10")
        #expect(answer.body.isEmpty)
        #expect(fixture.server.requestCount("/file") == 1)
    }

    @Test("If-Range with the stored strong ETag gets the range; with another validator, the whole response")
    func ifRange() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=600")], body: Self.digits)
        _ = try await fixture.cache.response(for: fixture.url("/file"))
        let matching = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-1", "If-Range": "\"v1\""]))
        #expect(matching.statusCode == 206)
        #expect(matching.text == "01")
        let other = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-1", "If-Range": "\"v0\""]))
        #expect(other.statusCode == 200)
        #expect(other.text == Self.digits)
        #expect(fixture.server.requestCount("/file") == 1)
    }

    @Test("a stale stored response is revalidated without a Range, and the range is cut from the freshened one")
    func rangeAfterRevalidation() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file") { request in
            if request.headers["if-none-match"] == "\"v1\"" { return .init(status: 304, headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")]) }
            return .init(headers: [("ETag", "\"v1\""), ("Cache-Control", "max-age=60")], body: Self.digits)
        }
        _ = try await fixture.cache.response(for: fixture.url("/file"))
        fixture.clock.advance(by: 120)
        let partial = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=3-4"]))
        #expect(partial.source.isRevalidated)
        #expect(partial.statusCode == 206)
        #expect(partial.text == "34")
        #expect(fixture.server.lastRequest("/file")?.headers["range"] == nil)
    }

    // MARK: Storing and combining 206 parts

    @Test("206 parts with one strong ETag are stored, answer ranges inside them, and combine into the complete response")
    func partsCombine() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", Self.rangeServer(body: Self.digits, etag: "\"v1\""))
        func get(_ range: String) async throws -> CachedResponse {
            try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": range]))
        }
        let first = try await get("bytes=0-3")
        #expect(first.statusCode == 206 && first.source.isNetwork && first.text == "0123")
        // Inside the stored part: from the cache, with the part's validator and a Content-Range of its own.
        let inside = try await get("bytes=1-2")
        #expect(inside.source.isCache && inside.statusCode == 206 && inside.text == "12")
        #expect(inside.headers["content-range"] == "bytes 1-2/10")
        #expect(fixture.server.requestCount("/file") == 1)
        // A plain GET is not answered by an incomplete response (§3.3).
        // Outside: to the server, with If-Range so an unchanged file sends only the range.
        #expect(try await get("bytes=6-9").text == "6789")
        #expect(fixture.server.lastRequest("/file")?.headers["if-range"] == "\"v1\"")
        #expect(try await get("bytes=4-5").text == "45")
        #expect(fixture.server.requestCount("/file") == 3)
        // 0-3, 4-5 and 6-9 make the whole: a plain GET is now a fresh 200 from the store.
        let whole = try await fixture.cache.response(for: fixture.url("/file"))
        #expect(whole.source.isCache)
        #expect(whole.statusCode == 200)
        #expect(whole.text == Self.digits)
        #expect(whole.headers["content-range"] == nil)
        #expect(whole.headers["content-length"] == "10")
        #expect(fixture.server.requestCount("/file") == 3)
    }

    @Test("offline, stale stored parts that hold the range are served, flagged stale")
    func stalePartsOffline() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", Self.rangeServer(body: Self.digits, etag: "\"v1\""))
        _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-5"]))
        fixture.clock.advance(by: 3600)
        fixture.server.stop()
        let offline = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=2-3"]))
        #expect(offline.statusCode == 206)
        #expect(offline.text == "23")
        #expect(offline.headers["content-range"] == "bytes 2-3/10")
        #expect(HTTPCacheConfiguration.isConnectionError(try #require(offline.source.staleReason)))
        // A range the parts do not hold has nothing to stand in for it.
        let error = await cacheError { _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=6-9"])) }
        guard case .network = error else { Issue.record("got \(String(describing: error))"); return }
    }

    @Test("an incomplete stored response never answers a request for the whole representation")
    func incompleteDoesNotAnswerWhole() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", Self.rangeServer(body: Self.digits, etag: "\"v1\""))
        _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-3"]))
        let whole = try await fixture.cache.response(for: fixture.url("/file"))
        #expect(whole.source.isNetwork)
        #expect(whole.text == Self.digits)
        #expect(fixture.server.requestCount("/file") == 2)
    }

    @Test("parts are not combined unless they share a strong validator", arguments: [("\"v1\"", "\"v2\""), ("W/\"v1\"", "W/\"v1\"")])
    func partsWithOtherValidators(firstTag: String, secondTag: String) async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", Self.rangeServer(body: Self.digits, etag: firstTag))
        _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-4"]))
        fixture.server.route("/file", Self.rangeServer(body: "abcdefghij", etag: secondTag, honoursIfRange: false))
        #expect(try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=5-9"])).text == "fghij")
        // The first part was replaced, not joined: "01234" + "fghij" never becomes a whole response.
        #expect(try await fixture.cache.response(for: fixture.url("/file")).source.isNetwork)
        #expect(try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-1"])).text == "ab")
    }

    @Test("when If-Range finds the representation changed, the server's whole new response replaces the parts")
    func changedRepresentationReplacesParts() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", Self.rangeServer(body: Self.digits, etag: "\"v1\""))
        _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-4"]))
        fixture.server.route("/file", Self.rangeServer(body: "abcdefghij", etag: "\"v2\""))
        let changed = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=5-9"]))
        #expect(changed.statusCode == 200)
        #expect(changed.text == "abcdefghij")
        #expect(try await fixture.cache.response(for: fixture.url("/file")).source.isCache)
    }

    @Test("several ranges are not answered by the cache: the request goes to the server as it is")
    func multipleRangesPassThrough() async throws {
        let fixture = try LoopbackFixture()
        fixture.server.route("/file", headers: [("Cache-Control", "max-age=600")], body: Self.digits)
        _ = try await fixture.cache.response(for: fixture.url("/file"))
        _ = try await fixture.cache.response(for: fixture.request("/file", headers: ["Range": "bytes=0-1, 4-5"]))
        #expect(fixture.server.requestCount("/file") == 2)
        #expect(fixture.server.lastRequest("/file")?.headers["range"] == "bytes=0-1, 4-5")
    }

    @Test("Range fields parse to one range or to nothing", arguments: [
        ("bytes=0-0", ByteRangeSpec.from(first: 0, last: 0)), ("BYTES = 5-", .from(first: 5, last: nil)), ("bytes=-7", .suffix(length: 7)),
        ("bytes=5-4", nil), ("items=0-1", nil), ("bytes=0-1,3-4", nil), ("bytes=a-b", nil), ("bytes=", nil), ("bytes=-", nil),
    ])
    func rangeParsing(field: String, expected: ByteRangeSpec?) {
        #expect(ByteRangeSpec(rangeField: field) == expected)
    }
}
