import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// One user's responses are never served to another: partitions chosen through `cached(by:partition:)`.
@Suite("URLProtocol: partitions keep users apart")
struct URLProtocolPartitionTests {
    private func session(_ fixture: URLProtocolFixture, token: String? = nil,
                         partition: HTTPCachePartitioning = .byCredentials) -> URLSession {
        let configuration = URLSessionConfiguration.patient
        if let token { configuration.httpAdditionalHeaders = ["Authorization": "Bearer \(token)"] }
        return URLSession(configuration: configuration.cached(by: fixture.cache, partition: partition))
    }

    /// `/me` answers with the caller's token, private and fresh for a minute.
    private func routeProfile(_ fixture: URLProtocolFixture) {
        fixture.server.route("/me") { request in
            .init(headers: [("Cache-Control", "private, max-age=60")], body: "profile of \(request.headers["authorization"] ?? "nobody")")
        }
    }

    @Test("two users with different Authorization each get their own private response")
    func privateResponsesPerCredential() async throws {
        let fixture = try URLProtocolFixture()
        routeProfile(fixture)
        let alice = session(fixture, token: "alice"), bob = session(fixture, token: "bob")
        defer { alice.finishTasksAndInvalidate(); bob.finishTasksAndInvalidate() }

        let first = try await fixture.get("/me", session: alice)
        let second = try await fixture.get("/me", session: bob)
        let again = try await fixture.get("/me", session: alice)
        #expect(first.body == "profile of Bearer alice")
        #expect(second.body == "profile of Bearer bob" && second.response.cacheStatus?.source == .network)
        #expect(again.body == "profile of Bearer alice" && again.response.cacheStatus?.source == .cache)
        #expect(fixture.server.requestCount("/me") == 2)
    }

    @Test("an Authorization set on the request itself partitions too; no credentials share one partition")
    func requestCredentials() async throws {
        let fixture = try URLProtocolFixture()
        routeProfile(fixture)
        var asAlice = URLRequest(url: fixture.server.url("/me"))
        asAlice.setValue("Bearer alice", forHTTPHeaderField: "Authorization")
        var asBob = asAlice
        asBob.setValue("Bearer bob", forHTTPHeaderField: "Authorization")
        #expect(try await fixture.send(asAlice).body == "profile of Bearer alice")
        #expect(try await fixture.send(asBob).body == "profile of Bearer bob")
        #expect(try await fixture.get("/me").body == "profile of nobody")
        let other = session(fixture)
        defer { other.finishTasksAndInvalidate() }
        #expect(try await fixture.get("/me", session: other).response.cacheStatus?.source == .cache)
    }

    @Test("named partitions survive a token change; perSession shares nothing; shared shares everything")
    func choices() async throws {
        let fixture = try URLProtocolFixture()
        routeProfile(fixture)
        let before = session(fixture, token: "t1", partition: .named("user-1"))
        let after = session(fixture, token: "t2", partition: .named("user-1"))
        let mine = session(fixture, partition: .perSession), yours = session(fixture, partition: .perSession)
        let sharedA = session(fixture, token: "a", partition: .shared), sharedB = session(fixture, token: "b", partition: .shared)
        defer { for session in [before, after, mine, yours, sharedA, sharedB] { session.finishTasksAndInvalidate() } }

        _ = try await fixture.get("/me", session: before)
        #expect(try await fixture.get("/me", session: after).body == "profile of Bearer t1") // rotated, same user
        _ = try await fixture.get("/me", session: mine)
        #expect(try await fixture.get("/me", session: yours).response.cacheStatus?.source == .network)
        _ = try await fixture.get("/me", session: sharedA)
        #expect(try await fixture.get("/me", session: sharedB).body == "profile of Bearer a") // chosen explicitly
    }

    @Test("a POST by one user removes what every partition stores for the URL")
    func invalidationCrossesPartitions() async throws {
        let fixture = try URLProtocolFixture()
        fixture.server.route("/todos") { request in
            request.method == "POST" ? .init(status: 201, body: "created")
                : .init(headers: [("Cache-Control", "max-age=600")], body: "list for \(request.headers["authorization"] ?? "-")")
        }
        let alice = session(fixture, token: "alice"), bob = session(fixture, token: "bob")
        defer { alice.finishTasksAndInvalidate(); bob.finishTasksAndInvalidate() }
        _ = try await fixture.get("/todos", session: alice)
        var post = URLRequest(url: fixture.server.url("/todos"))
        post.httpMethod = "POST"
        post.httpBody = Data("{}".utf8)
        _ = try await fixture.send(post, session: bob)
        #expect(try await fixture.get("/todos", session: alice).response.cacheStatus?.source == .network)
    }

    @Test("partition names cannot spell another kind's partition or a namespace", arguments: ["", "|", "a|b", "credentials-x", "%7C"])
    func partitionIdentity(name: String) throws {
        let request = URLRequest(url: URL(string: "https://e.com/me")!)
        let named = HTTPCachePartitioning.named(name).partition(for: request)
        #expect(named != HTTPCachePartitioning.shared.partition(for: request))
        #expect(!named.hasPrefix("credentials-") && !named.hasPrefix("session-"))
        for namespace in ["", "a", "a|b"] {
            let key = try #require(CacheKey.response(for: request, namespace: namespace, partition: named, varyNames: []))
            let parsed = try #require(CacheKey(rawValue: key.rawValue))
            #expect(parsed == key && parsed.namespace == namespace && parsed.partition == named)
        }
    }

    @Test("credential digests keep the two fields apart")
    func credentialDigest() {
        func partition(_ authorization: String?, _ cookie: String?) -> String {
            var request = URLRequest(url: URL(string: "https://e.com/me")!)
            request.setValue(authorization, forHTTPHeaderField: "Authorization")
            request.setValue(cookie, forHTTPHeaderField: "Cookie")
            return HTTPCachePartitioning.byCredentials.partition(for: request)
        }
        #expect(partition(nil, nil) == "")
        #expect(partition("a", nil) != partition(nil, "a"))
        #expect(partition("a\n1:b", nil) != partition("a", "b"))
        #expect(partition("x", "y") == partition("x", "y"))
        #expect(!partition("Bearer secret", nil).contains("secret"))
    }
}
