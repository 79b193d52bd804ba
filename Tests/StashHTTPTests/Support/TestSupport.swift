import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash
import Testing
@testable import StashHTTP

extension TestClock {
    /// The current time as an HTTP date, for `Date` and `Last-Modified` headers.
    func httpDate(offset: TimeInterval = 0) -> String { HTTPDate.string(from: now.addingTimeInterval(offset)) }
}

/// Everything one cache test needs: its own folder, clock, fake transport and cache.
struct CacheFixture {
    let directory: TemporaryDirectory
    let clock: TestClock
    let transport: FakeTransport
    let cache: HTTPCache

    init(configuration: HTTPCacheConfiguration = HTTPCacheConfiguration(), name: String = #function) throws {
        directory = TemporaryDirectory(name)
        clock = TestClock()
        transport = FakeTransport()
        cache = try HTTPCache(diskConfig: directory.diskConfig(), transport: transport, configuration: configuration, now: clock.function)
    }

    /// The same store and clock, opened again by a new cache (as after an app restart).
    func reopened(configuration: HTTPCacheConfiguration = HTTPCacheConfiguration()) throws -> HTTPCache {
        try HTTPCache(diskConfig: directory.diskConfig(), transport: transport, configuration: configuration, now: clock.function)
    }
}

let exampleURL = URL(string: "https://api.example.com/todos")!

func request(_ url: URL = exampleURL, method: String = "GET", headers: [String: String] = [:]) -> URLRequest {
    var request = URLRequest(url: url)
    request.httpMethod = method
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    return request
}

extension ResponseSource {
    var isNetwork: Bool { if case .network = self { true } else { false } }
    var isCache: Bool { if case .cache = self { true } else { false } }
    var isRevalidated: Bool { if case .revalidated = self { true } else { false } }
    var isStale: Bool { if case .stale = self { true } else { false } }
}

extension CachedResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
}

/// Runs `body` and returns the `HTTPCacheError` it threw; records an issue otherwise.
func cacheError(sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async -> HTTPCacheError? {
    do {
        try await body()
        Issue.record("expected an HTTPCacheError, got none", sourceLocation: sourceLocation)
        return nil
    } catch let error as HTTPCacheError {
        return error
    } catch {
        Issue.record("expected an HTTPCacheError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension URLSessionConfiguration {
    /// An ephemeral configuration whose request and resource timeouts are ``TestDeadline/long``, for
    /// sessions and transports that talk to the loopback server: on a loaded machine the server's
    /// thread may not run for longer than URLSession's default 60 s, and a timeout there is no
    /// finding. Tests of timeouts set their own short ones.
    static var patient: URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TestDeadline.long
        configuration.timeoutIntervalForResource = TestDeadline.long
        return configuration
    }
}
