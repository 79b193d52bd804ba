import Foundation
import Testing
@testable import StashHTTP

@Suite("stale-while-revalidate (RFC 5861 §3)")
struct StaleWhileRevalidateTests {
    private func fixture(_ name: String = #function, age: TimeInterval,
                         configuration: HTTPCacheConfiguration = HTTPCacheConfiguration()) async throws -> CacheFixture {
        let fixture = try CacheFixture(configuration: configuration, name: name)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60, stale-while-revalidate=120", "ETag": "\"v1\""], body: "old")
        _ = try await fixture.cache.response(for: exampleURL)
        fixture.clock.advance(by: age)
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60", "ETag": "\"v2\""], body: "new")
        return fixture
    }

    @Test("within the window the stale response comes at once and the refresh is stored")
    func staleThenRefreshed() async throws {
        let fixture = try await fixture(age: 100)
        let response = try await fixture.cache.response(for: exampleURL)
        guard case .stale(let reason) = response.source, case .revalidationInProgress = reason as? HTTPCacheError else {
            Issue.record("got \(response.source)"); return
        }
        #expect(response.text == "old")
        await fixture.cache.waitForBackgroundRefreshes()
        #expect(fixture.transport.lastRequest?.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        let refreshed = try await fixture.cache.response(for: exampleURL)
        #expect(refreshed.source.isCache)
        #expect(refreshed.text == "new")
    }

    @Test("the stream delivers the stale response, then the refreshed one")
    func streamDeliversBoth() async throws {
        let fixture = try await fixture(age: 100)
        var texts: [String] = []
        var sources: [ResponseSource] = []
        for try await response in fixture.cache.responses(for: request()) {
            texts.append(response.text)
            sources.append(response.source)
        }
        #expect(texts == ["old", "new"])
        #expect(sources.first?.isStale == true)
        #expect(sources.last?.isNetwork == true)
    }

    @Test("the stream delivers a single response when no refresh is needed")
    func streamSingle() async throws {
        let fixture = try await fixture(age: 10)
        var count = 0
        for try await response in fixture.cache.responses(for: request()) {
            #expect(response.source.isCache)
            count += 1
        }
        #expect(count == 1)
    }

    @Test("beyond the window the response is revalidated before it is returned")
    func beyondWindow() async throws {
        let fixture = try await fixture(age: 200)
        let response = try await fixture.cache.response(for: exampleURL)
        #expect(response.source.isNetwork)
        #expect(response.text == "new")
    }

    @Test("the directive can be ignored by configuration")
    func turnedOff() async throws {
        let fixture = try await fixture(age: 100, configuration: HTTPCacheConfiguration(honoursStaleWhileRevalidate: false))
        #expect(try await fixture.cache.response(for: exampleURL).source.isNetwork)
    }

    @Test("the completion-handler variant is called with both responses")
    func handlerDeliversBoth() async throws {
        let fixture = try await fixture(age: 100)
        let texts = await withCheckedContinuation { (continuation: CheckedContinuation<[String], Never>) in
            let collected = Recorder<String>()
            fixture.cache.responses(for: request()) { result in
                if collected.append((try? result.get().text) ?? "error") == 2 { continuation.resume(returning: collected.received) }
            }
        }
        #expect(texts == ["old", "new"])
    }
}
