import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

@Suite("Cache keys")
struct CacheKeyTests {
    private func normalized(_ text: String) -> String? { URLNormalizer.normalize(URL(string: text)!) }

    @Test("scheme and host are lower-cased and the default port dropped")
    func schemeHostAndPort() {
        #expect(normalized("HTTPS://API.Example.COM:443/Todos") == "https://api.example.com/Todos")
        #expect(normalized("http://example.com:80/a") == "http://example.com/a")
        #expect(normalized("http://example.com:8080/a") == "http://example.com:8080/a")
        #expect(normalized("https://example.com:80/a") == "https://example.com:80/a")
    }

    @Test("an empty path becomes / and the fragment and credentials are dropped")
    func pathFragmentAndCredentials() {
        #expect(normalized("https://example.com") == "https://example.com/")
        #expect(normalized("https://user:secret@example.com/a#section") == "https://example.com/a")
    }

    @Test("query items are sorted and percent-encoded one way")
    func queryNormalization() {
        #expect(normalized("https://e.com/s?b=2&a=1") == normalized("https://e.com/s?a=1&b=2"))
        #expect(normalized("https://e.com/s?q=caf%C3%A9") == normalized("https://e.com/s?q=café"))
        #expect(normalized("https://e.com/s?q=a%2Fb") == normalized("https://e.com/s?q=a/b"))
        #expect(normalized("https://e.com/s?q=%7e") == "https://e.com/s?q=~")
    }

    @Test("different queries, and + versus %2B, stay different")
    func queriesThatDiffer() {
        #expect(normalized("https://e.com/s?page=1") != normalized("https://e.com/s?page=2"))
        #expect(normalized("https://e.com/s?q=a+b") != normalized("https://e.com/s?q=a%2Bb"))
        #expect(normalized("https://e.com/s?flag") != normalized("https://e.com/s?flag="))
        #expect(normalized("https://e.com/s?") == normalized("https://e.com/s"))
    }

    @Test("method, namespace and scheme each give a different key")
    func keysSeparate() throws {
        let get = CacheKey.response(for: request(), namespace: "prod", varyNames: [])
        let head = CacheKey.response(for: request(method: "HEAD"), namespace: "prod", varyNames: [])
        let staging = CacheKey.response(for: request(), namespace: "staging", varyNames: [])
        let http = CacheKey.response(for: request(URL(string: "http://api.example.com/todos")!), namespace: "prod", varyNames: [])
        #expect(Set([get, head, staging, http].map { $0?.rawValue }).count == 4)
    }

    @Test("the Vary-selected request header values are part of the key")
    func varyValuesInKey() throws {
        let english = CacheKey.response(for: request(headers: ["Accept-Language": "en"]), namespace: "", varyNames: ["accept-language"])
        let french = CacheKey.response(for: request(headers: ["Accept-Language": "fr"]), namespace: "", varyNames: ["accept-language"])
        let spaced = CacheKey.response(for: request(headers: ["Accept-Language": "en"]), namespace: "", varyNames: ["accept-language"])
        #expect(english != french)
        #expect(english == spaced)
        #expect(english?.variant == "accept-language=en")
    }

    @Test("keys with any namespace parse back", arguments: ["", "prod", "user 42", "a%b|c", "日本"])
    func keysRoundTrip(namespace: String) throws {
        let key = try #require(CacheKey.response(for: request(headers: ["Accept": "text/html, */*"]), namespace: namespace, varyNames: ["accept"]))
        let parsed = try #require(CacheKey(rawValue: key.rawValue))
        #expect(parsed == key)
        #expect(parsed.namespace == namespace)
        #expect(CacheKey(rawValue: key.varyRecordKey.rawValue)?.kind == .vary)
    }

    @Test("keys the cache did not write are not taken for its own")
    func foreignKeys() {
        #expect(CacheKey(rawValue: "me") == nil)
        #expect(CacheKey(rawValue: "http-response only three") == nil)
    }
}

@Suite("Cache keys: repeated query parameters")
struct RepeatedQueryParameterKeyTests {
    private func normalized(_ text: String) -> String? { URLNormalizer.normalize(URL(string: text)!) }

    @Test("items of one name keep their order; names are still sorted")
    func order() {
        #expect(normalized("https://e.com/s?sort=date&sort=name") != normalized("https://e.com/s?sort=name&sort=date"))
        #expect(normalized("https://e.com/s?sort=b&a=1&sort=a") == "https://e.com/s?a=1&sort=b&sort=a")
        #expect(normalized("https://e.com/s?a=1&b=2&a=3") == normalized("https://e.com/s?b=2&a=1&a=3"))
        #expect(normalized("https://e.com/s?a&a=") != normalized("https://e.com/s?a=&a"))
        #expect(normalized("https://e.com/s?a=%31&a=2") == normalized("https://e.com/s?a=1&a=2"))
    }

    @Test("an entry an older version stored under the value-sorted key is not served for the other order")
    func olderValueSortedEntry() async throws {
        let fixture = try CacheFixture()
        let asked = URL(string: "https://api.example.com/items?sort=date&sort=name")!
        let other = URL(string: "https://api.example.com/items?sort=name&sort=date")!
        let key = try #require(CacheKey.response(for: URLRequest(url: asked), namespace: "", varyNames: []))
        let foreign = StoredResponse(url: other, method: "GET", namespace: "", statusCode: 200,
                                     headers: ["cache-control": "max-age=600"], body: Data("name first".utf8),
                                     requestTime: fixture.clock.now, responseTime: fixture.clock.now)
        try fixture.cache.storage.setObject(foreign, forKey: key.rawValue)
        fixture.transport.respond(200, headers: ["cache-control": "max-age=600"], body: "date first")
        let response = try await fixture.cache.response(for: asked)
        #expect(response.text == "date first" && response.source.isNetwork)
    }
}
