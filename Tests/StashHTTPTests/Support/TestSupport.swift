import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash
import Testing
@testable import StashHTTP

/// A clock the test moves by hand, injected as `now:` so freshness is tested without sleeping.
final class TestClock: @unchecked Sendable {
    // @unchecked Sendable: `current` is only touched under `lock`.
    private let lock = NSLock()
    private var current: Date

    /// Starts at a fixed, whole second so HTTP dates (second precision) round-trip exactly.
    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = start
    }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(by seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }

    /// The clock as the `now:` function the cache takes.
    var function: @Sendable () -> Date { { self.now } }

    /// The current time as an HTTP date, for `Date` and `Last-Modified` headers.
    func httpDate(offset: TimeInterval = 0) -> String { HTTPDate.string(from: now.addingTimeInterval(offset)) }
}

/// A fresh, uniquely named temporary directory, removed when the test that made it ends.
final class TemporaryDirectory {
    let url: URL

    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StashHTTPTests-\(safe.prefix(40))-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func diskConfig(_ name: String = "http", maxSize: Int = 0) -> DiskConfig {
        DiskConfig(name: name, maxSize: maxSize, directory: url)
    }
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
