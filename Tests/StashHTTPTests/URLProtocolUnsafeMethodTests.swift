import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP
import Stash

/// Unsafe methods invalidate whatever way they are sent, and responses in flight across them are
/// not stored; download tasks deliver their file.
@Suite("URLProtocol: unsafe methods, requests in flight, downloads")
struct URLProtocolUnsafeMethodTests {
    /// `/todos`: a GET is a list fresh for 10 minutes, anything else 201.
    private func routeTodos(_ fixture: URLProtocolFixture) {
        fixture.server.route("/todos") { request in
            request.method == "GET" ? .init(headers: [("Cache-Control", "max-age=600")], body: "list")
                : .init(status: 201, body: "created")
        }
    }

    private func storeList(_ fixture: URLProtocolFixture) async throws {
        _ = try await fixture.get("/todos")
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .cache)
    }

    @Test("a POST without a body invalidates")
    func bodilessPost() async throws {
        let fixture = try URLProtocolFixture()
        routeTodos(fixture)
        try await storeList(fixture)
        var post = URLRequest(url: fixture.server.url("/todos"))
        post.httpMethod = "POST"
        #expect(try await fixture.send(post).response.statusCode == 201)
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .network)
    }

    @Test("upload tasks send their body and invalidate before they complete", arguments: ["PUT", "POST", "DELETE"])
    func uploadTask(method: String) async throws {
        let fixture = try URLProtocolFixture()
        routeTodos(fixture)
        try await storeList(fixture)
        var upload = URLRequest(url: fixture.server.url("/todos"))
        upload.httpMethod = method
        let payload = Data(repeating: 7, count: 10_000)
        let (_, response) = try await fixture.session.upload(for: upload, from: payload)
        #expect((response as? HTTPURLResponse)?.statusCode == 201)
        #expect(fixture.server.lastRequest("/todos")?.body == payload)
        #expect(try await fixture.get("/todos").response.cacheStatus?.source == .network)
    }

    @Test("a GET sent before a POST and answered after it is not stored")
    func getInFlightAcrossPost() async throws {
        let fixture = try URLProtocolFixture()
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        let gets = Locked(0)
        fixture.server.route("/todos") { request in
            guard request.method == "GET" else { return .init(status: 201, body: "created") }
            let number = gets.withLock { count -> Int in count += 1; return count }
            if number == 1 { arrival.yield(); release.wait() } // the first GET is held until the POST is done
            return .init(headers: [("Cache-Control", "max-age=600")], body: number == 1 ? "before the POST" : "after the POST")
        }
        let session = fixture.session, url = fixture.server.url("/todos")
        let pending = Task { try await session.data(from: url) }
        for await _ in arrived { break }
        var post = URLRequest(url: url)
        post.httpMethod = "POST"
        post.httpBody = Data("{}".utf8)
        _ = try await fixture.send(post)
        // A GET after the POST joins no exchange that the POST overtook: it reaches the server itself.
        // (One that joined the held exchange never does; the wait is bounded, then the held GET goes on.)
        let afterPost = Task { try await session.data(from: url) }
        _ = try await TestDeadline.suspendUntil { fixture.server.requestCount("/todos") >= 3 }
        release.signal()
        let (early, _) = try await pending.value
        let (late, _) = try await afterPost.value

        #expect(String(decoding: early, as: UTF8.self) == "before the POST")
        #expect(String(decoding: late, as: UTF8.self) == "after the POST")
        let later = try await fixture.get("/todos")
        #expect(later.body == "after the POST")
        #expect(fixture.cache.inFlight.count == 0)
    }

    @Test("removing responses (a sign-out) while a GET is in flight: its answer is not stored")
    func getInFlightAcrossRemoval() async throws {
        let fixture = try URLProtocolFixture()
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        fixture.server.route("/me") { _ in
            arrival.yield()
            release.wait()
            return .init(headers: [("Cache-Control", "private, max-age=600")], body: "signed-in profile")
        }
        let session = fixture.session, url = fixture.server.url("/me")
        let pending = Task { try await session.data(from: url) }
        for await _ in arrived { break }
        try await fixture.cache.removeResponses(.all)
        release.signal()
        _ = try await pending.value
        #expect(fixture.cache.storedResponseCount == 0)
    }

    @Test("a download task delivers the file")
    func downloadTask() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/file", headers: [("Cache-Control", "max-age=60")], body: "file contents")
        let url = fixture.server.url("/file")
        let (contents, status) = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(String?, Int?), any Error>) in
            fixture.session.downloadTask(with: url) { file, response, error in
                if let error { continuation.resume(throwing: error); return }
                // The file is removed once the handler returns: read it here.
                let contents = file.flatMap { try? String(contentsOf: $0, encoding: .utf8) }
                continuation.resume(returning: (contents, (response as? HTTPURLResponse)?.statusCode))
            }.resume()
        }
        #expect(status == 200)
        #expect(contents == "file contents")
    }

    @Test("repeated query parameters keep their order: two orders are two lists")
    func repeatedQueryParameters() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/items") { request in
            .init(headers: [("Cache-Control", "max-age=600")], body: String(request.target.drop { $0 != "?" }))
        }
        let dateFirst = try await fixture.get("/items?sort=date&sort=name")
        let nameFirst = try await fixture.get("/items?sort=name&sort=date")
        let reordered = try await fixture.get("/items?sort=date&page=2&sort=name")
        let same = try await fixture.get("/items?page=2&sort=date&sort=name")
        #expect(dateFirst.body == "?sort=date&sort=name")
        #expect(nameFirst.body == "?sort=name&sort=date" && nameFirst.response.cacheStatus?.source == .network)
        #expect(reordered.body == "?sort=date&page=2&sort=name")
        #expect(same.response.cacheStatus?.source == .cache) // other names may move; a name's own order stays
    }

    @Test("a stale-while-revalidate refresh in flight across a POST stores nothing")
    func backgroundRefreshAcrossPost() async throws {
        let fixture = try LoopbackFixture()
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let release = DispatchSemaphore(value: 0)
        let gets = Locked(0)
        fixture.server.route("/feed") { request in
            guard request.method == "GET" else { return .init(status: 204) }
            let number = gets.withLock { count -> Int in count += 1; return count }
            if number == 2 { arrival.yield(); release.wait() } // the background refresh is held
            return .init(headers: [("Cache-Control", "max-age=60, stale-while-revalidate=600")], body: "feed \(number)")
        }
        _ = try await fixture.cache.response(for: fixture.url("/feed"))
        fixture.clock.advance(by: 120)
        let stale = try await fixture.cache.response(for: fixture.url("/feed")) // starts the refresh
        for await _ in arrived { break }
        _ = try await fixture.cache.response(for: fixture.request("/feed", method: "POST"))
        release.signal()
        await fixture.cache.waitForBackgroundRefreshes()

        #expect(stale.source.isStale && stale.text == "feed 1")
        #expect(fixture.cache.storedResponseCount == 0)
        let next = try await fixture.cache.response(for: fixture.url("/feed"))
        #expect(next.source.isNetwork && next.text == "feed 3")
    }
}
