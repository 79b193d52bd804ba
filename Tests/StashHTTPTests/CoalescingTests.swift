import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// Concurrent identical requests share one network exchange.
@Suite("Request coalescing")
struct CoalescingTests {
    /// Waits (bounded) until `count` callers wait for the exchange of `request`; the server holds each
    /// answer until the test opens the gate, so the callers overlap whatever the machine's load.
    func waitForWaiters(_ count: Int, _ fixture: LoopbackFixture, _ request: URLRequest) async throws -> Bool {
        let cacheKey = try #require(CacheKey.response(for: request, namespace: "", varyNames: []))
        let key = RequestCoalescer.key(for: request, cacheKey: cacheKey)
        _ = try await TestDeadline.suspendUntil { fixture.cache.coalescer.waiters(for: key) >= count }
        return fixture.cache.coalescer.waiters(for: key) == count
    }

    @Test("five concurrent identical requests reach the server once and all get its answer")
    func identicalRequestsShare() async throws {
        let fixture = try LoopbackFixture()
        let gate = DispatchSemaphore(value: 0)
        fixture.server.route("/feed") { _ in
            gate.wait()
            return .init(headers: [("Cache-Control", "no-cache")], body: "feed")
        }
        let request = fixture.request("/feed", headers: ["Authorization": "Bearer a"])
        let cache = fixture.cache
        let tasks = (0..<5).map { _ in Task { try await cache.response(for: request) } }
        let overlapped = try await waitForWaiters(5, fixture, request)
        #expect(overlapped)
        for _ in 0..<(overlapped ? 1 : 5) { gate.signal() }
        for task in tasks { #expect(try await task.value.text == "feed") }
        #expect(fixture.server.requestCount("/feed") == (overlapped ? 1 : 5))
    }

    @Test("requests that differ in a header field, such as credentials, do not share")
    func differentCredentialsDoNotShare() async throws {
        let fixture = try LoopbackFixture()
        let gate = DispatchSemaphore(value: 0)
        fixture.server.route("/me") { request in
            gate.wait()
            return .init(headers: [("Cache-Control", "no-store")], body: request.headers["authorization"] ?? "")
        }
        let alice = fixture.request("/me", headers: ["Authorization": "alice"])
        let bob = fixture.request("/me", headers: ["Authorization": "bob"])
        let cache = fixture.cache
        let first = Task { try await cache.response(for: alice) }
        let second = Task { try await cache.response(for: bob) }
        #expect(try await waitForWaiters(1, fixture, alice))
        #expect(try await waitForWaiters(1, fixture, bob))
        gate.signal()
        gate.signal()
        #expect(try await first.value.text == "alice")
        #expect(try await second.value.text == "bob")
        #expect(fixture.server.requestCount("/me") == 2)
    }

    @Test("a caller that cancels leaves the shared exchange running for the others")
    func oneCancellationDoesNotCancelTheOthers() async throws {
        let fixture = try LoopbackFixture()
        let gate = DispatchSemaphore(value: 0)
        fixture.server.route("/feed") { _ in
            gate.wait()
            return .init(headers: [("Cache-Control", "no-cache")], body: "feed")
        }
        let request = fixture.request("/feed")
        let cache = fixture.cache
        let leaving = Task { try await cache.response(for: request) }
        let staying = Task { try await cache.response(for: request) }
        let overlapped = try await waitForWaiters(2, fixture, request)
        #expect(overlapped)
        leaving.cancel()
        #expect(try await waitForWaiters(1, fixture, request))
        for _ in 0..<(overlapped ? 1 : 2) { gate.signal() }
        #expect(try await staying.value.text == "feed")
        _ = await leaving.result
        #expect(fixture.server.requestCount("/feed") == (overlapped ? 1 : 2))
    }
}
