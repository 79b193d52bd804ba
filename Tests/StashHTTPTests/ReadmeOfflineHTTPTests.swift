import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash
import StashHTTP // the public API only, as README readers use it
import Testing

/// The README's "Offline HTTP" snippet, compiled and run against the loopback server, so the code
/// users copy keeps working.
@Suite("README offline HTTP example")
struct ReadmeOfflineHTTPTests {
    private struct Todo: Codable, Sendable { var title: String }

    @Test("the README's offline example compiles and behaves as it says")
    func readmeOfflineExample() async throws {
        let server = try LoopbackHTTPServer()
        server.route("/todos", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"1\"")], body: #"[{"title":"Ship it"}]"#)
        let todosURL = server.url("/todos")
        let directory = TemporaryDirectory()
        let clock = TestClock()
        var printed: [String] = []
        func print(_ line: Any) { printed.append("\(line)") }

        // --- README begins (DiskConfig gains `directory:` and the cache the clock `now:` for the test) ---
        let cache = try HTTPCache(diskConfig: DiskConfig(name: "HTTP", maxSize: 50_000_000, directory: directory.url),
                                  now: clock.function)

        // Online: fetched, stored, and served from the store while fresh.
        let todos = try await cache.decoded([Todo].self, for: URLRequest(url: todosURL))
        print(todos.response.source)   // network
        // --- README pauses: ten minutes pass and the network goes away ---
        clock.advance(by: 600)
        server.stop()
        // --- README resumes ---

        // Offline: the last good response, flagged stale, with the network error and its age.
        let offline = try await cache.response(for: todosURL)
        if case .stale(let error) = offline.source {
            print("offline (\(error.localizedDescription)), showing data from \(Int(offline.age / 60)) minutes ago")
        }
        let titles = try offline.decode([Todo].self).map(\.title)
        print(cache.statistics)   // hits: 0, misses: 1, revalidations: 0, stale served: 1, …
        // --- README ends ---

        #expect(todos.value.map(\.title) == ["Ship it"])
        #expect(titles == ["Ship it"])
        #expect(printed.first == "network")
        #expect(printed.count == 3)
        #expect(printed[1].hasPrefix("offline (") && printed[1].hasSuffix("showing data from 10 minutes ago"))
        #expect(cache.statistics.staleServed == 1)
    }
}
