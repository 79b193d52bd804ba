#if os(Linux)
import Glibc
import Testing

/// The tests of an offline server count on a stopped ``LoopbackHTTPServer`` refusing connections. That
/// holds only if no other socket is given its port meanwhile: once a request to a stopped server, in a run
/// with suites in parallel, got another test's server's answer. On Linux the port is held by a socket
/// (see ``LoopbackPort``), which this checks the kernel sees.
@Suite("Loopback server: a stopped server keeps its port")
struct LoopbackServerPortTests {
    @Test("while a stopped server lives, no other socket can bind its port")
    func stoppedServerKeepsItsPort() throws {
        let server = try LoopbackHTTPServer()
        server.stop()
        #expect(LoopbackPort.bindError(port: server.port) == EADDRINUSE)
    }
}
#endif
