import Foundation
import Stash
import Testing
@testable import StashHTTP

@Suite("Maintenance and statistics")
struct MaintenanceTests {
    private let urls = [
        "https://api.example.com/v1/users/1", "https://api.example.com/v1/users/2",
        "https://api.example.com/v1/posts/1", "https://other.example.com/v1/users/1",
    ].map { URL(string: $0)! }

    /// Stores every URL of `urls` in namespaces "a" and "b", one second apart.
    private func filled(_ name: String = #function) async throws -> CacheFixture {
        let fixture = try CacheFixture(name: name)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: String(repeating: "x", count: 1000))
        for namespace in ["a", "b"] {
            for url in urls {
                _ = try await fixture.cache.response(for: url, options: HTTPRequestOptions(namespace: namespace))
                fixture.clock.advance(by: 1)
            }
        }
        return fixture
    }

    private func isStored(_ fixture: CacheFixture, _ url: URL, namespace: String) async -> Bool {
        (try? await fixture.cache.response(for: url, options: HTTPRequestOptions(policy: .cacheOnly, namespace: namespace))) != nil
    }

    @Test("removing all leaves keys the HTTP cache did not write")
    func removeAll() async throws {
        let fixture = try await filled()
        let notes = fixture.cache.storage.transformCodable(ofType: String.self)
        try notes.setObject("keep me", forKey: "note")
        try await fixture.cache.removeResponses(.all)
        #expect(fixture.cache.storedResponseCount == 0)
        #expect(fixture.cache.storage.allKeys == ["note"])
    }

    @Test("removing by namespace leaves the other namespaces")
    func byNamespace() async throws {
        let fixture = try await filled()
        try await fixture.cache.removeResponses(.namespace("a"))
        #expect(fixture.cache.storedResponseCount == 4)
        #expect(await !isStored(fixture, urls[0], namespace: "a"))
        #expect(await isStored(fixture, urls[0], namespace: "b"))
    }

    @Test("removing by URL takes every namespace, or just one")
    func byURL() async throws {
        let fixture = try await filled()
        try await fixture.cache.removeResponses(.url(URL(string: "HTTPS://API.example.com:443/v1/users/1")!, namespace: "a"))
        #expect(await !isStored(fixture, urls[0], namespace: "a"))
        #expect(await isStored(fixture, urls[0], namespace: "b"))
        try await fixture.cache.removeResponses(.url(urls[0], namespace: nil))
        #expect(await !isStored(fixture, urls[0], namespace: "b"))
        #expect(fixture.cache.storedResponseCount == 6)
    }

    @Test("removing by URL prefix takes what is under it and nothing else")
    func byPrefix() async throws {
        let fixture = try await filled()
        try await fixture.cache.removeResponses(.urlPrefix(URL(string: "https://api.example.com/v1/users/")!, namespace: nil))
        #expect(fixture.cache.storedResponseCount == 4)
        #expect(await isStored(fixture, urls[2], namespace: "a"))
        #expect(await isStored(fixture, urls[3], namespace: "a"))
        try await fixture.cache.removeResponses(.urlPrefix(URL(string: "https://api.example.com")!, namespace: "b"))
        #expect(await !isStored(fixture, urls[2], namespace: "b"))
        #expect(await isStored(fixture, urls[2], namespace: "a"))
    }

    @Test("removing responses received before a date keeps the newer ones")
    func olderThan() async throws {
        let fixture = try await filled()
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try await fixture.cache.removeResponses(.receivedBefore(start.addingTimeInterval(4)))
        #expect(fixture.cache.storedResponseCount == 4)
        #expect(await !isStored(fixture, urls[3], namespace: "a"))
        #expect(await isStored(fixture, urls[0], namespace: "b"))
    }

    @Test("trimming removes the oldest responses until the store fits")
    func trim() async throws {
        let fixture = try await filled()
        let before = fixture.cache.storage.totalSize
        let target = before / 2
        try await fixture.cache.trim(toSize: target)
        #expect(fixture.cache.storage.totalSize <= target)
        #expect(await !isStored(fixture, urls[0], namespace: "a"))
        #expect(await isStored(fixture, urls[3], namespace: "b"))
        try await fixture.cache.trim(toSize: 0)
        #expect(fixture.cache.storedResponseCount == 0)
    }

    @Test("the store's own size limit bounds the cache after every write")
    func storeLimit() async throws {
        let directory = TemporaryDirectory()
        let transport = FakeTransport()
        transport.respond(headers: ["Cache-Control": "max-age=600"], body: String(repeating: "y", count: 10_000))
        let cache = try HTTPCache(diskConfig: directory.diskConfig(maxSize: 35_000), transport: transport, now: TestClock().function)
        for index in 0..<10 { _ = try await cache.response(for: URL(string: "https://e.com/\(index)")!) }
        #expect(cache.storage.totalSize <= 35_000)
        #expect(cache.storedResponseCount == 3)
    }

    @Test("the counters count hits, misses, revalidations and stale responses")
    func statistics() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=10", "ETag": "\"1\""], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)           // miss
        _ = try await fixture.cache.response(for: exampleURL)           // hit
        fixture.clock.advance(by: 20)
        fixture.transport.respond(304, headers: ["ETag": "\"1\""])
        _ = try await fixture.cache.response(for: exampleURL)           // revalidation
        fixture.clock.advance(by: 20)
        fixture.transport.goOffline()
        _ = try await fixture.cache.response(for: exampleURL)           // stale
        #expect(fixture.cache.statistics == HTTPCacheStatistics(hits: 1, misses: 1, revalidations: 1, staleServed: 1))
        #expect(fixture.cache.statistics.hitRatio == 0.5)
        fixture.cache.resetStatistics()
        #expect(fixture.cache.statistics == HTTPCacheStatistics())
    }

    @Test("counters stay exact under concurrent requests")
    func concurrentCounting() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "b")
        _ = try await fixture.cache.response(for: exampleURL)
        let cache = fixture.cache
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { _ = try await cache.response(for: exampleURL) } }
            try await group.waitForAll()
        }
        #expect(fixture.cache.statistics.hits == 50)
    }

    @Test("a damaged stored response costs a network request, and the failure is reported")
    func damagedEntry() async throws {
        let reported = Recorder<String>()
        let fixture = try CacheFixture(configuration: HTTPCacheConfiguration(storageErrorHandler: { reported.append("\($0)") }))
        fixture.transport.respond(headers: ["Cache-Control": "max-age=600"], body: "good")
        _ = try await fixture.cache.response(for: exampleURL)
        let key = try #require(fixture.cache.storage.allKeys.first { CacheKey(rawValue: $0)?.kind == .response })
        try fixture.cache.storage.transformData().setObject(Data("garbage".utf8), forKey: key)
        let response = try await fixture.cache.response(for: exampleURL)
        #expect(response.source.isNetwork)
        #expect(reported.received.count == 1)
        #expect(fixture.cache.statistics.storageFailures == 1)
    }
}
