import Foundation
import Testing
@testable import StashHTTP

@Suite("Completion-handler API")
struct CompletionHandlerTests {
    private struct Todo: Codable, Sendable, Equatable { var title: String }

    @Test("response(for:completion:) delivers the same response as the async call")
    func response() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: "hello")
        let result = await withCheckedContinuation { continuation in
            fixture.cache.response(for: request()) { continuation.resume(returning: $0) }
        }
        #expect(try result.get().text == "hello")
    }

    @Test("errors arrive as failures with their cause")
    func failure() async throws {
        let fixture = try CacheFixture()
        let result = await withCheckedContinuation { continuation in
            fixture.cache.response(for: request(), options: HTTPRequestOptions(policy: .cacheOnly)) { continuation.resume(returning: $0) }
        }
        guard case .failure(let error) = result, case .notCached = error as? HTTPCacheError else {
            Issue.record("got \(result)"); return
        }
    }

    @Test("decoded(_:for:completion:) decodes the body and keeps the response")
    func decoded() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: #"[{"title":"Write tests"}]"#)
        let result = await withCheckedContinuation { continuation in
            fixture.cache.decoded([Todo].self, for: request()) { continuation.resume(returning: $0) }
        }
        let decoded = try result.get()
        #expect(decoded.value == [Todo(title: "Write tests")])
        #expect(decoded.response.source.isNetwork)
    }

    @Test("a body that does not decode gives a decoding error with the decoder's cause")
    func decodingFailure() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(body: "not json")
        let error = await cacheError { _ = try await fixture.cache.decoded([Todo].self, for: request()) }
        guard case .decoding(let underlying) = error else { Issue.record("got \(String(describing: error))"); return }
        #expect(underlying is DecodingError)
    }

    @Test("maintenance calls have completion variants too")
    func maintenance() async throws {
        let fixture = try CacheFixture()
        fixture.transport.respond(headers: ["Cache-Control": "max-age=60"], body: "hello")
        _ = try await fixture.cache.response(for: exampleURL)
        let removed = await withCheckedContinuation { continuation in
            fixture.cache.removeResponses(.url(exampleURL, namespace: nil)) { continuation.resume(returning: $0) }
        }
        try removed.get()
        #expect(fixture.cache.storedResponseCount == 0)
        let trimmed = await withCheckedContinuation { continuation in
            fixture.cache.trim(toSize: 0) { continuation.resume(returning: $0) }
        }
        try trimmed.get()
    }
}
