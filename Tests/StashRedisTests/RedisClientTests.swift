import Foundation
import Testing
@testable import StashRedis

/// What the client does without a server: RESP parsing and URLs (these run everywhere).
@Suite("Redis protocol and configuration")
struct RESPTests {
    @Test("the parser reads every RESP2 and RESP3 type, however the bytes are split")
    func parserReadsSplitReplies() throws {
        let wire = "+OK\r\n-ERR bad\r\n:42\r\n$5\r\nhe\r\no\r\n$-1\r\n*2\r\n:1\r\n$0\r\n\r\n_\r\n,3.5\r\n#t\r\n%1\r\n+a\r\n:1\r\n>2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
        let expected: [RESPValue] = [.simpleString("OK"), .error("ERR bad"), .integer(42), .bulkString(Data("he\r\no".utf8)),
                                     .null, .array([.integer(1), .bulkString(Data())]), .null, .double(3.5), .boolean(true),
                                     .map([(.simpleString("a"), .integer(1))]),
                                     .push([.bulkString(Data("invalidate".utf8)), .array([.bulkString(Data("k".utf8))])])]
        let bytes = Array(wire.utf8)
        for split in [1, 2, 3, 7, bytes.count] {
            var parser = RESPParser()
            var values: [RESPValue] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + split)
                bytes[offset..<end].withUnsafeBytes { parser.append($0) }
                offset = end
                while let value = try parser.next() { values.append(value) }
            }
            #expect(values == expected, "split every \(split) bytes")
        }
    }

    @Test("garbage from the server is a protocol error, not a crash")
    func parserRejectsGarbage() {
        var parser = RESPParser()
        Array("?what\r\n".utf8).withUnsafeBytes { parser.append($0) }
        #expect(throws: RedisError.self) { try parser.next() }
    }

    @Test("a redis:// URL gives host, port, user, password and database; rediss:// is refused")
    func urlParsing() throws {
        let config = try RedisConfiguration(url: "redis://app:s%40cret@127.0.0.1:6380/3")
        #expect(config.host == "127.0.0.1" && config.port == 6380 && config.database == 3)
        #expect(config.username == "app" && config.password == "s@cret")
        #expect(try RedisConfiguration(url: "redis://localhost").port == 6379)
        #expect(throws: RedisError.self) { try RedisConfiguration(url: "rediss://localhost") }
        #expect(throws: RedisError.self) { try RedisConfiguration(url: "redis://localhost/x") }
    }

}

@Suite("Redis client", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct RedisClientTests {
    // MARK: Against a server

    @Test("commands round-trip bytes exactly, and a pipeline returns replies in order")
    func pipelining() throws {
        let server = try RedisServer()
        let client = server.client()
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let replies = try client.pipeline([["SET", "a", bytes], ["GET", "a"], ["INCR", "n"], ["INCR", "n"], ["GET", "missing"], ["LPUSH", "a", "x"]])
        #expect(replies[0] == .simpleString("OK"))
        #expect(replies[1] == .bulkString(bytes))
        #expect(replies[2] == .integer(1) && replies[3] == .integer(2))
        #expect(replies[4] == .null)
        guard case .error(let message) = replies[5] else { Issue.record("WRONGTYPE expected"); return }
        #expect(message.hasPrefix("WRONGTYPE"))
    }

    @Test("AUTH with user and password, and SELECT of a database")
    func authenticationAndDatabase() throws {
        let server = try RedisServer(["--user", "app", "on", ">s3cret", "~*", "&*", "+@all", "--requirepass", "other"])
        var config = server.configuration
        config.username = "app"
        config.password = "s3cret"
        config.database = 5
        let client = RedisClient(configuration: config)
        try client.send(["SET", "k", "v"])
        var wrong = config
        wrong.password = "nope"
        #expect(throws: RedisError.self) { try RedisClient(configuration: wrong).send(["PING"]) }
        var unauthenticated = server.configuration
        unauthenticated.database = 5
        unauthenticated.password = "other"
        #expect(try RedisClient(configuration: unauthenticated).send(["GET", "k"]).string == "v")
        unauthenticated.database = 0
        #expect(try RedisClient(configuration: unauthenticated).send(["GET", "k"]) == .null)
    }

    @Test("a command that gets no reply times out after the command timeout")
    func commandTimeout() throws {
        let server = try RedisServer()
        var config = server.configuration
        config.commandTimeout = 0.2
        let client = RedisClient(configuration: config)
        let start = ContinuousClock.now
        // The server answers BLPOP only after `TestDeadline.long`: the client must give up at 0.2 s. (Half
        // of that long wait is the margin for a loaded machine, so only waiting for the reply fails.)
        let wait = Int(TestDeadline.long)
        #expect(throws: RedisError.timeout(operation: "BLPOP", seconds: 0.2)) { try client.send(["BLPOP", "empty", "\(wait)"]) }
        #expect(ContinuousClock.now - start < .seconds(wait / 2), "waited for the reply (\(wait) s) instead of the timeout")
        #expect(try client.send(["PING"]) == .simpleString("PONG"), "the timed-out connection was replaced")
    }

    @Test("no server: an immediate connection error, then back-off, then it connects once the server is up")
    func reconnectWithBackoff() throws {
        let server = try RedisServer()
        let client = server.client()
        try client.send(["SET", "k", "v"])
        server.kill()
        #expect(throws: RedisError.self) { try client.send(["GET", "k"]) }
        // Within the back-off, calls fail at once, naming the failure.
        do {
            try client.send(["GET", "k"])
        } catch let error as RedisError {
            if case .backingOff = error {} else if case .connectFailed = error {} else { Issue.record("unexpected \(error)") }
        }
        try server.start()
        #expect(try eventually { try client.send(["PING"]) } == .simpleString("PONG"))
        #expect(try client.send(["GET", "k"]) == .null, "a new server without persistence is empty")
    }

    @Test("an idle pooled connection that the server killed is replaced without an error")
    func killedIdleConnectionIsReplaced() throws {
        let server = try RedisServer()
        let client = server.client()
        try client.send(["SET", "k", "v"])
        try server.client().send(["CLIENT", "KILL", "SKIPME", "no", "TYPE", "normal"])
        #expect(try client.send(["GET", "k"]).string == "v")
    }

    @Test("the pool uses at most poolSize connections under concurrent load")
    func poolIsBounded() throws {
        let server = try RedisServer()
        var config = server.configuration
        config.poolSize = 3
        let client = RedisClient(configuration: config)
        DispatchQueue.concurrentPerform(iterations: 16) { index in
            for step in 0..<50 { _ = try? client.send(["SET", "k\(index)", step]) }
        }
        let list = try server.client().send(["CLIENT", "LIST"]).string ?? ""
        let ours = list.split(separator: "\n").filter { $0.contains("name=stash ") }
        #expect(ours.count <= 3)
        #expect(try client.send(["GET", "k15"]).string == "49")
    }
}
