import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// `URLSessionConfiguration.cached(by:)`: which protocol class a configuration gets.
@Suite("URLProtocol: the one-line set-up")
struct URLProtocolSetUpTests {
    private func cache(_ directory: TemporaryDirectory, _ name: String) throws -> HTTPCache {
        try HTTPCache(diskConfig: directory.diskConfig(name))
    }

    private func boundClass(_ configuration: URLSessionConfiguration) -> HTTPCacheURLProtocol.Type? {
        configuration.protocolClasses?.lazy.compactMap { $0 as? HTTPCacheURLProtocol.Type }.first
    }

    private func same(_ first: HTTPCacheURLProtocol.Type, _ second: HTTPCacheURLProtocol.Type) -> Bool {
        ObjectIdentifier(first) == ObjectIdentifier(second)
    }

    @Test("the same cache and settings share a class; another cache, other headers or another cookie jar get their own")
    func classPerBinding() throws {
        let directory = TemporaryDirectory()
        let first = try cache(directory, "first"), second = try cache(directory, "second")
        defer { HTTPCacheURLProtocol.unbind(first); HTTPCacheURLProtocol.unbind(second) }
        let ephemeral = URLSessionConfiguration.ephemeral
        let withHeaders = URLSessionConfiguration.ephemeral
        withHeaders.httpAdditionalHeaders = ["X-Team": "blue"]

        let a = try #require(boundClass(ephemeral.cached(by: first)))
        let b = try #require(boundClass(ephemeral.cached(by: first)))
        let c = try #require(boundClass(ephemeral.cached(by: second)))
        let d = try #require(boundClass(withHeaders.cached(by: first)))
        let e = try #require(boundClass(URLSessionConfiguration.default.cached(by: first)))
        let f = try #require(boundClass(URLSessionConfiguration.default.cached(by: first)))
        #expect(same(a, b) && same(e, f)) // `.default` always has the shared cookie storage
        #expect(!same(a, c) && !same(a, d) && !same(c, d) && !same(a, e)) // every `.ephemeral` has a jar of its own
        #expect(URLProtocolBindings.shared.binding(for: d)?.additionalHeaders == ["X-Team": "blue"])
        #expect(URLProtocolBindings.shared.binding(for: HTTPCacheURLProtocol.self) == nil)
    }

    @Test("the configuration is copied: the original keeps its classes and cache, others stay listed")
    func originalUntouched() throws {
        let directory = TemporaryDirectory()
        let cache = try cache(directory, "http")
        defer { HTTPCacheURLProtocol.unbind(cache) }
        let original = URLSessionConfiguration.ephemeral
        original.protocolClasses = [StubURLProtocol.self]
        let cached = original.cached(by: cache)

        #expect(original.protocolClasses?.count == 1 && boundClass(original) == nil)
        #expect(cached.urlCache == nil)
        #expect(cached.protocolClasses?.first is HTTPCacheURLProtocol.Type)
        #expect(cached.protocolClasses?.contains { ObjectIdentifier($0) == ObjectIdentifier(StubURLProtocol.self) } == true)
    }

    @Test("setting up again for another cache replaces the first binding instead of adding to it")
    func rebinding() throws {
        let directory = TemporaryDirectory()
        let first = try cache(directory, "first"), second = try cache(directory, "second")
        defer { HTTPCacheURLProtocol.unbind(first); HTTPCacheURLProtocol.unbind(second) }
        let twice = URLSessionConfiguration.ephemeral.cached(by: first).cached(by: second)
        #expect(twice.protocolClasses?.filter { $0 is HTTPCacheURLProtocol.Type }.count == 1)
        let bound = try #require(boundClass(twice))
        #expect(URLProtocolBindings.shared.binding(for: bound)?.cache === second)
    }

    @Test("an unbound class takes no request; a bound one takes http(s) only, and never its own tagged requests")
    func canInit() throws {
        let directory = TemporaryDirectory()
        let cache = try cache(directory, "http")
        let bound = try #require(boundClass(URLSessionConfiguration.ephemeral.cached(by: cache)))
        let plain = URLRequest(url: URL(string: "http://127.0.0.1:1/a")!)
        #expect(bound.canInit(with: plain))
        #expect(!bound.canInit(with: URLRequest(url: URL(string: "ftp://127.0.0.1/a")!)))
        #expect(!HTTPCacheURLProtocol.canInit(with: plain))
        #if !canImport(FoundationNetworking) // swift-corelibs-foundation drops URLProtocol properties when a request is copied
        #expect(!bound.canInit(with: HTTPCacheURLProtocol.prepare(plain, settings: SessionSettings()).request))
        #endif
        HTTPCacheURLProtocol.unbind(cache)
        #expect(!bound.canInit(with: plain))
    }
}
