import Testing
@testable import StashRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The failure tests kill a ``RedisServer``, count on connections to its port being refused, and start it
/// again on that port, where their stores still connect. That holds only if no other socket is given the
/// port meanwhile (suites run in parallel): the port is held for the object's life (``LoopbackPort``), and
/// redis-server must be able to bind it beside the holder.
@Suite("Redis test server: a killed server keeps its port", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct RedisServerPortTests {
    @Test("redis-server binds the held port, no other socket can bind it while the killed server lives, and a restart comes back on it")
    func killedServerKeepsItsPort() throws {
        let server = try RedisServer()
        let client = server.client()
        #expect(try client.send(["PING"]) == .simpleString("PONG"))
        server.kill()
        #expect(throws: RedisError.self) { try client.send(["PING"]) }
        #if os(Linux)
        // Darwin holds the port only against this process's own servers, which this bind is not.
        #expect(LoopbackPort.bindError(port: UInt16(server.port)) == EADDRINUSE)
        #endif
        try server.start()
        #expect(try eventually { try client.send(["PING"]) } == .simpleString("PONG"))
    }
}
