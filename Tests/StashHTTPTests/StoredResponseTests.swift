import Foundation
import Stash
import Testing
@testable import StashHTTP

@Suite("Stored responses in a Storage")
struct StoredResponseTests {
    private let response = StoredResponse(
        url: exampleURL, method: "get", namespace: "ns", statusCode: 200, headers: ["ETag": "\"1\""],
        body: Data([0, 1, 2, 255]), requestTime: Date(timeIntervalSince1970: 10), responseTime: Date(timeIntervalSince1970: 11),
        varyValues: ["accept": "application/json"], freshnessLifetimeOverride: 60)

    @Test("the transformer round-trips every field and keeps the body's bytes raw at the end")
    func transformerRoundTrip() throws {
        let data = try StoredResponse.transformer.toData(response)
        #expect(data.suffix(4) == Data([0, 1, 2, 255]))
        #expect(try StoredResponse.transformer.fromData(data) == response)
        #expect(response.method == "GET")
    }

    @Test("bytes that are no stored response are rejected, not misread", arguments: [Data(), Data("SHR1".utf8), Data("{}".utf8),
                                                                                      Data([0x53, 0x48, 0x52, 0x31, 0, 0, 1, 0, 0x7B])])
    func transformerRejects(data: Data) {
        #expect(throws: StoredResponseFormatError.self) { _ = try StoredResponse.transformer.fromData(data) }
    }

    @Test("a cache over a Storage opened by the caller shares it with the caller's other views")
    func callerOpenedStorage() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<StoredResponse>(diskConfig: directory.diskConfig(), transformer: StoredResponse.transformer)
        let transport = FakeTransport()
        transport.respond(headers: ["Cache-Control": "max-age=60"], body: "shared")
        let cache = HTTPCache(storage: storage, transport: transport, now: TestClock().function)
        _ = try await cache.response(for: exampleURL)
        let key = try #require(storage.allKeys.first { $0.hasPrefix("http-response ") })
        #expect(try storage.object(forKey: key).body == Data("shared".utf8))
        #expect(try storage.entry(forKey: key).expiry == .never)
    }
}
