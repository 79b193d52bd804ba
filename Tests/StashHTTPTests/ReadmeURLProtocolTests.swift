import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Stash
import StashHTTP // the public API only, as README readers use it
import Testing

/// The README's `URLSession` snippet (the "Offline HTTP" section), compiled and run against the
/// loopback server, so the code users copy keeps working.
@Suite("README URLSession example")
struct ReadmeURLProtocolTests {
    private struct Todo: Codable, Sendable { var title: String }

    @Test("the README's URLSession example compiles and behaves as it says")
    func readmeURLSessionExample() async throws {
        let server = try LoopbackHTTPServer()
        server.route("/todos", headers: [("Cache-Control", "max-age=60"), ("ETag", "\"1\"")], body: #"[{"title":"Ship it"}]"#)
        let todosURL = server.url("/todos")
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let cache = try HTTPCache(diskConfig: DiskConfig(name: "HTTP", maxSize: 50_000_000, directory: directory.url),
                                  now: clock.function)
        defer { HTTPCacheURLProtocol.unbind(cache) }
        var printed: [String] = []
        func print(_ line: Any) { printed.append("\(line)") }
        // As after the README's first snippet: the todos are stored, ten minutes pass, the network goes away.
        _ = try await cache.response(for: todosURL)
        clock.advance(by: 600)
        server.stop()

        // --- README begins ---
        let session = URLSession(configuration: .default.cached(by: cache))

        let (data, response) = try await session.data(from: todosURL)   // offline: the stored response
        let cachedTodos = try JSONDecoder().decode([Todo].self, from: data)
        // Any code can read the `Stash-Cache` header field; with `import StashHTTP` it is typed:
        if let status = (response as? HTTPURLResponse)?.cacheStatus, status.source == .stale {
            print("offline (\(status.staleReason ?? "")), showing data from \(status.age / 60) minutes ago")
        }
        // --- README ends ---
        session.finishTasksAndInvalidate()

        #expect(cachedTodos.map(\.title) == ["Ship it"])
        #expect(printed.count == 1)
        #expect(printed.first?.hasPrefix("offline (") == true && printed.first?.hasSuffix("showing data from 10 minutes ago") == true)
        let field = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Stash-Cache")
        #expect(field?.hasPrefix("stale; age=600; error=") == true)
    }

    @Test("the README shows the code this test runs")
    func readmeHasTheSnippet() throws {
        let readme = packageFile("README.md")
        let text = try String(contentsOf: readme, encoding: .utf8)
        for line in ["let session = URLSession(configuration: .default.cached(by: cache))",
                     "let (data, response) = try await session.data(from: todosURL)   // offline: the stored response",
                     "if let status = (response as? HTTPURLResponse)?.cacheStatus, status.source == .stale {"] {
            #expect(text.contains(line), "README.md lacks: \(line)")
        }
    }
}
