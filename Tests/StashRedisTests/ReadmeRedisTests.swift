import Foundation
import Testing
import Stash // the public API only, as README readers use it
import StashRedis

/// The README's Redis snippet, compiled and run against a real redis-server, so the code users
/// copy keeps working.
@Suite("README Redis example", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct ReadmeRedisTests {
    private struct Session: Codable, Sendable { var user: String; var cart: [String] }

    @Test("the README's Redis example compiles and behaves as it says")
    func readmeRedis() async throws {
        let server = try RedisServer()
        let url = "redis://127.0.0.1:\(server.port)/0"
        let before = Date() // the expiry is an hour after the write, which happens between these two

        // --- README begins (the URL names the test's server) ---
        let sessions = try RedisHybridStorage<Session>(
            configuration: RedisConfiguration(url: url),
            namespace: "sessions",                      // keys are sessions:<key>; removeAll() clears only these
            expiry: .seconds(3600),                     // Redis's own expiry (SET … PXAT)
            memoryConfig: MemoryConfig(countLimit: 10_000),
            transformer: TransformerFactory.forCodable(ofType: Session.self)
        )

        try sessions.setObject(Session(user: "ada", cart: ["book"]), forKey: "s-42")
        let session = try await sessions.async.object(forKey: "s-42")   // from Redis, then from memory
        print(session.cart, try sessions.entry(forKey: "s-42").expiry)  // ["book"] date(…)
        // --- README pauses: the claims, checked ---
        let after = Date()
        #expect(session.cart == ["book"])
        guard case .date(let date) = try sessions.entry(forKey: "s-42").expiry else { Issue.record("no expiry"); return }
        // Redis keeps milliseconds: a millisecond either side. No fixed window: the steps above can take minutes on a loaded machine.
        let expected = before.addingTimeInterval(3600 - 0.001)...after.addingTimeInterval(3600 + 0.001)
        #expect(expected.contains(date), "\(date) is not an hour after the write (\(before)...\(after))")
        #expect(try server.client().send(["EXISTS", "sessions:s-42"]) == .integer(1))
        server.kill()
        var reported = false
        // --- README resumes ---

        // Redis down: a StorageError.io with the cause, within the timeout, never a hang; memory is
        // flushed (no stale copy), and the store reconnects by itself once Redis is back.
        do {
            try sessions.setObject(session, forKey: "s-43")
        } catch StorageError.io(_, _, let cause) {
            print("Redis unavailable: \(cause)")
            reported = cause is RedisError
        }
        // --- README ends ---
        #expect(reported)
        try server.start()
        let afterRestart = try eventually { () throws -> Session? in
            do { return try sessions.object(forKey: "s-42") } catch StorageError.notFound { return nil }
        }
        #expect(afterRestart == nil, "the restarted server is empty, and no stale memory copy answers")
        try eventually { try sessions.setObject(Session(user: "ada", cart: []), forKey: "s-42") }
        #expect(try sessions.object(forKey: "s-42").cart.isEmpty)
    }
}
