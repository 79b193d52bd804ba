import Foundation
import Testing
@testable import StashHTTP

/// Cache keys do not change when the OS does: ``URLNormalizer`` reads a URL's own text, not
/// `URLComponents` (whose parsing changed with macOS 14 / iOS 17). Each key below is the one Stash
/// gave on Linux before (through `URLComponents`, Swift 6.0–6.3), pinned so that caches written by
/// earlier versions keep their entries.
@Suite("Cache keys across OS updates")
struct CacheKeyStabilityTests {
    /// URLs every Foundation keeps as written (valid RFC 3986), and their keys.
    static let pinned: [(url: String, key: String)] = [
        ("HTTPS://API.Example.COM:443/Todos", "https://api.example.com/Todos"),
        ("https://example.com", "https://example.com/"),
        ("https://user:secret@example.com/a#section", "https://example.com/a"),
        ("https://b%C3%BCcher.de/", "https://b%c3%bccher.de/"),
        ("https://xn--bcher-kva.de/", "https://b%c3%bccher.de/"),
        ("https://e.com/a%2fb", "https://e.com/a%2fb"),
        ("https://e.com/a%2Fb", "https://e.com/a%2Fb"),
        ("https://e.com/caf%c3%a9", "https://e.com/caf%c3%a9"),
        ("https://e.com/s?q=a%20b", "https://e.com/s?q=a%20b"),
        ("https://e.com/s?", "https://e.com/s"),
        ("https://e.com/s?#frag", "https://e.com/s"),
        ("https://e.com/s#", "https://e.com/s"),
        ("https://e.com:443", "https://e.com/"),
        ("https://e.com:/x", "https://e.com/x"),
        ("https://e.com:0443/x", "https://e.com/x"),
        ("http://e.com:80/", "http://e.com/"),
        ("http://e.com:8080", "http://e.com:8080/"),
        ("https://[::1]/x", "https://[::1]/x"),
        ("https://[::1]:443/x", "https://[::1]/x"),
        ("https://[2001:DB8::1]:8443/x", "https://[2001:db8::1]:8443/x"),
        ("https://[fe80::1%25en0]/x", "https://[fe80::1%25en0]/x"),
        ("https://e.com/s?b=2&a=1#f", "https://e.com/s?a=1&b=2"),
        ("https://e.com/s?a=%7e&b=%7E", "https://e.com/s?a=~&b=~"),
        ("https://e.com/%7e", "https://e.com/%7e"),
        ("https://e.com/./a/../b", "https://e.com/./a/../b"),
        ("https://e.com//double", "https://e.com//double"),
        ("https://e.com/s?a=1&&b=2", "https://e.com/s?a=1&b=2"),
        ("https://e.com/s?=x", "https://e.com/s?=x"),
        ("https://e.com/p;params", "https://e.com/p;params"),
        ("https://@e.com/x", "https://e.com/x"),
        ("https://user@E.com:444/x", "https://e.com:444/x"),
        ("mailto:someone@example.com", "mailto://someone@example.com"),
        ("file:///tmp/x", "file:///tmp/x"),
        ("https://e.com/s?q=a+b", "https://e.com/s?q=a+b"),
        ("wss://e.com:443/socket", "wss://e.com/socket"),
        ("ws://e.com:80", "ws://e.com/"),
        ("https://e.com/s?q=a%2Bb&r=%2b", "https://e.com/s?q=a%2Bb&r=%2B"),
        ("https://e.com/a?b?c", "https://e.com/a?b%3Fc"),
        ("https://e.com/a%23b", "https://e.com/a%23b"),
        ("https://e.com/s?q=%26&r=1", "https://e.com/s?q=%26&r=1"),
    ]

    /// URLs whose text `URL(string:)` rewrites (Unicode, spaces, invalid escapes): the keys of what
    /// Linux's `URL(string:)` makes of them. On Apple platforms before macOS 14 / iOS 17 `URL(string:)`
    /// refuses most of these, so no cache holds them under another key.
    static let rewritten: [(url: String, key: String)] = [
        ("https://bücher.de/", "https://b%c3%bccher.de/"),
        ("https://BÜCHER.de/Straße", "https://b%c3%bccher.de/Stra%C3%9Fe"),
        ("https://e.com/café", "https://e.com/caf%C3%A9"),
        ("https://e.com/a b", "https://e.com/a%20b"),
        ("https://e.com/s?q=a b", "https://e.com/s?q=a%20b"),
        ("https://e.com/s?q=%ZZ", "https://e.com/s?q=%25ZZ"),
        ("https://e.com/s?q=[1]", "https://e.com/s?q=%5B1%5D"),
        ("https://e.com/s?q=ü", "https://e.com/s?q=%C3%BC"),
        ("HTTP://E.COM/ÜBER", "http://e.com/%C3%9CBER"),
        ("https://e.com/%E2%82%AC?€=€", "https://e.com/%E2%82%AC?%E2%82%AC=%E2%82%AC"),
    ]

    @Test("every pinned URL keeps the key it had", arguments: pinned + rewritten)
    func keyIsPinned(url: String, key: String) throws {
        #expect(URLNormalizer.normalize(try #require(URL(string: url))) == key)
    }

    @Test("a host in Unicode, in punycode (any case) or percent-encoded is one key")
    func internationalHostsMeet() throws {
        let spellings = ["https://xn--bcher-kva.de/a", "https://XN--BCHER-KVA.DE/a", "https://b%C3%BCcher.de/a", "https://b%c3%bccher.de/a"]
        for spelling in spellings {
            #expect(URLNormalizer.normalize(try #require(URL(string: spelling))) == "https://b%c3%bccher.de/a", "\(spelling)")
        }
        var components = URLComponents()
        (components.scheme, components.host, components.path) = ("https", "bücher.de", "/a")
        if let url = components.url { // Unicode hosts are refused by some Foundations
            #expect(URLNormalizer.normalize(url) == "https://b%c3%bccher.de/a", "\(url.absoluteString)")
        }
    }

    @Test("Punycode decodes RFC 3492's samples and refuses what is not Punycode")
    func punycode() {
        #expect(Punycode.decode("bcher-kva") == "bücher")
        #expect(Punycode.decode("mnchen-3ya") == "münchen")
        #expect(Punycode.decode("fsqu00a") == "例子")
        #expect(Punycode.decode("ihqwcrb4cv8a8dqg056pqjye") == "他们为什么不说中文") // RFC 3492 7.1 (B)
        #expect(Punycode.decode("bcher-kv!") == nil)
        #expect(Punycode.decode("99999999999999999999") == nil) // overflows
        #expect(Punycode.decode("ü-kva") == nil) // a basic code point that is not ASCII
    }

    @Test("a URL without a scheme has no key; a relative one is resolved first")
    func schemeless() throws {
        #expect(URLNormalizer.normalize(try #require(URL(string: "e.com/x"))) == nil)
        let base = try #require(URL(string: "https://E.com/dir/"))
        #expect(URLNormalizer.normalize(try #require(URL(string: "x?b=1&a=2", relativeTo: base))) == "https://e.com/dir/x?a=2&b=1")
    }
}
