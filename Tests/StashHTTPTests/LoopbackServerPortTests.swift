#if os(Linux)
import Glibc
import Testing

/// The tests of an offline server count on a stopped ``LoopbackHTTPServer`` refusing connections. That
/// holds only if no other socket is given its port meanwhile: once a request to a stopped server, in a run
/// with suites in parallel, got another test's server's answer. On Linux the port is held by a socket
/// (see `LoopbackHTTPServer+Port.swift`), which this checks the kernel sees.
@Suite("Loopback server: a stopped server keeps its port")
struct LoopbackServerPortTests {
    @Test("while a stopped server lives, no other socket can bind its port")
    func stoppedServerKeepsItsPort() throws {
        let server = try LoopbackHTTPServer()
        server.stop()
        #expect(bindError(port: server.port) == EADDRINUSE)
    }

    /// The `errno` of binding a fresh socket, without `SO_REUSEADDR`, to 127.0.0.1:`port`; 0 if it binds.
    private func bindError(port: UInt16) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return bound == 0 ? 0 : errno
    }
}
#endif
