import Foundation
import Testing
@testable import StashHTTP

@Suite("Vary (RFC 9111 §4.1)")
struct VaryTests {
    private func languageServer(_ transport: FakeTransport) {
        transport.respond { request in
            let language = request.value(forHTTPHeaderField: "Accept-Language") ?? "none"
            return HTTPTransportResponse(statusCode: 200, headers: ["Cache-Control": "max-age=600", "Vary": "Accept-Language"],
                                         body: Data(language.utf8))
        }
    }

    @Test("each value of a Vary header gets its own stored response")
    func variantsKeptApart() async throws {
        let fixture = try CacheFixture()
        languageServer(fixture.transport)
        #expect(try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"])).text == "en")
        #expect(try await fixture.cache.response(for: request(headers: ["Accept-Language": "fr"])).text == "fr")
        let english = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"]))
        #expect(english.source.isCache)
        #expect(english.text == "en")
        #expect(try await fixture.cache.response(for: request(headers: ["Accept-Language": "fr"])).source.isCache)
        #expect(fixture.transport.requestCount == 2)
    }

    @Test("a request without the varying header matches only a response stored without it")
    func absentHeader() async throws {
        let fixture = try CacheFixture()
        languageServer(fixture.transport)
        _ = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"]))
        let bare = try await fixture.cache.response(for: request())
        #expect(bare.source.isNetwork)
        #expect(bare.text == "none")
        #expect(try await fixture.cache.response(for: request()).source.isCache)
    }

    @Test("whitespace differences in the varying header select the same response")
    func whitespaceNormalized() async throws {
        let fixture = try CacheFixture()
        languageServer(fixture.transport)
        _ = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en,  fr"]))
        #expect(try await fixture.cache.response(for: request(headers: ["Accept-Language": "en, fr"])).source.isCache)
    }

    @Test("a response that stops varying replaces the variant stored under the old Vary")
    func varyRemoved() async throws {
        let fixture = try CacheFixture()
        languageServer(fixture.transport)
        _ = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"]))
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "same for all")
        _ = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"]), options: HTTPRequestOptions(policy: .reload))
        #expect(fixture.cache.storedResponseCount == 1)
        let other = try await fixture.cache.response(for: request(headers: ["Accept-Language": "de"]))
        #expect(other.source.isCache)
        #expect(other.text == "same for all")
    }

    @Test("the stored response records the request values Vary selected")
    func varyValuesStored() async throws {
        let fixture = try CacheFixture()
        languageServer(fixture.transport)
        _ = try await fixture.cache.response(for: request(headers: ["Accept-Language": "en"]))
        let key = try #require(fixture.cache.storage.allKeys.first { CacheKey(rawValue: $0)?.kind == .response })
        #expect(try fixture.cache.storage.entry(forKey: key).object.varyValues == ["accept-language": "en"])
    }
}
