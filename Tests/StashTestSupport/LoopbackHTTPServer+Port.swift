#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Keeping a server's port for as long as the server object lives, so that once ``LoopbackHTTPServer/stop()``
/// has closed the listening socket, a connection to the port is refused (the offline server the tests
/// expect) and never answered by another server the kernel gave the freed port to in the meantime. With
/// tests running in parallel that happened: a request to a stopped server got another test's answer.
///
/// On Linux a second socket, bound to the port and never listening, holds it: the kernel gives the port to
/// no other socket, in this process or another, and since that socket does not listen, a connection to the
/// port is refused (`ECONNREFUSED`) once the listener is closed. Both sockets set `SO_REUSEADDR`, which
/// lets two sockets share a port as long as at most one of them listens.
///
/// Darwin gets no such socket: a BSD stack matches a connection attempt to any socket bound to the port,
/// listening or not, and silently drops it when that socket does not listen, so the client would wait for
/// its timeout instead of being refused. There, the servers of this process keep the set of ports of the
/// servers still alive, and a new server that is given one of them asks for another. A socket opened by
/// anything else (another process) can still be given a stopped server's port there.
extension LoopbackHTTPServer {
    struct Sockets {
        let listener: Int32
        /// The socket that holds the port on Linux; nil on Darwin.
        let reservation: Int32?
        let port: UInt16
    }

    #if os(Linux)
    private static let holdsPortWithSecondSocket = true
    #else
    private static let holdsPortWithSecondSocket = false
    #endif

    /// A socket listening on 127.0.0.1, on a port the kernel picks and no live server of this process has.
    static func openSockets() throws -> Sockets {
        for _ in 0..<100 {
            let reservation = try holdsPortWithSecondSocket ? boundSocket(port: 0, sharingPort: true) : nil
            let listener: Int32
            do {
                listener = try boundSocket(port: reservation.map(localPort(of:)) ?? 0, sharingPort: holdsPortWithSecondSocket)
            } catch {
                closeAll(reservation)
                throw error
            }
            let port = localPort(of: listener)
            guard LivePorts.shared.claim(port) else {
                // A stopped server of this process counts on this port refusing connections: ask for another.
                closeAll(listener, reservation)
                continue
            }
            guard listen(listener, 64) == 0 else {
                let code = errno
                closeAll(listener, reservation)
                LivePorts.shared.release(port)
                throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
            }
            return Sockets(listener: listener, reservation: reservation, port: port)
        }
        throw POSIXError(.EADDRINUSE)
    }

    /// Gives up the port once the listener is closed: from then on the kernel may give it to anyone.
    static func releasePort(_ port: UInt16, reservation: Int32?) {
        closeAll(reservation)
        LivePorts.shared.release(port)
    }

    /// A TCP socket bound to 127.0.0.1:`port` (0: the kernel picks); `sharingPort` sets `SO_REUSEADDR` first.
    private static func boundSocket(port: UInt16, sharingPort: Bool) throws -> Int32 {
        #if canImport(Glibc)
        let socketType = Int32(SOCK_STREAM.rawValue)
        #else
        let socketType = SOCK_STREAM
        #endif
        let descriptor = socket(AF_INET, socketType, 0)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        if sharingPort, setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            throw closing(descriptor)
        }
        var address = sockaddr_in()
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw closing(descriptor) }
        return descriptor
    }

    /// The error of the call that just failed on `descriptor`, which is closed.
    private static func closing(_ descriptor: Int32) -> POSIXError {
        let code = errno
        close(descriptor)
        return POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
    }

    private static func localPort(of descriptor: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private static func closeAll(_ descriptors: Int32?...) {
        for case let descriptor? in descriptors { close(descriptor) }
    }
}

/// The ports of the servers of this process that are still alive, stopped or not.
private final class LivePorts: @unchecked Sendable {
    // @unchecked Sendable: `ports` is reached only under `lock`.
    static let shared = LivePorts()
    private let lock = NSLock()
    private var ports: Set<UInt16> = []

    /// Adds `port`; false when a live server has it already.
    func claim(_ port: UInt16) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ports.insert(port).inserted
    }

    func release(_ port: UInt16) {
        lock.lock()
        defer { lock.unlock() }
        ports.remove(port)
    }
}
