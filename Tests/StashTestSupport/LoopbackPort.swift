#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A port on 127.0.0.1 that stays one test server's for as long as this object lives, stopped or running,
/// so that while the server is down a connection to the port is refused (the offline server the tests
/// expect) and never answered by another server the kernel gave the freed port to in the meantime. With
/// tests running in parallel that happened: a request to a stopped ``LoopbackHTTPServer`` got another
/// test's answer. It also lets a server that is restarted come back on the port its clients know.
///
/// ```swift
/// let port = try LoopbackPort()   // a redis-server child then binds port.number itself
/// ```
///
/// On Linux a socket bound to the port that never listens holds it: the kernel gives the port to no other
/// socket, in this process or another (neither to a `bind` to port 0 nor to an outgoing connection), and
/// since that socket does not listen, a connection to the port is refused (`ECONNREFUSED`) while the
/// server is down. The holder sets `SO_REUSEADDR`, which lets another socket that sets it too bind the
/// port beside it as long as at most one of them listens: the server's listener (``LoopbackHTTPServer``'s,
/// or `redis-server`'s, which sets it).
///
/// Darwin gets no such socket: a BSD stack matches a connection attempt to any socket bound to the port,
/// listening or not, and silently drops it when that socket does not listen, so the client would wait for
/// its timeout instead of being refused (and a second socket could not bind the port beside it without
/// `SO_REUSEPORT`, which `redis-server` does not set). There, the live `LoopbackPort`s of this process keep
/// the set of their ports, and a new one that the kernel gives one of them asks for another. A socket
/// opened by anything else (another process, or an outgoing connection's local port) can still be given a
/// stopped server's port there.
public final class LoopbackPort: Sendable {
    /// The port number.
    public let number: UInt16
    /// On Linux, the socket that holds the port: bound with `SO_REUSEADDR`, never listening; nil on Darwin.
    private let holder: Int32?

    #if os(Linux)
    private static let holdsPortWithSocket = true
    #else
    private static let holdsPortWithSocket = false
    #endif

    /// Takes a port the kernel picks, for a server that binds it itself, such as a `redis-server` child
    /// (on Linux it must set `SO_REUSEADDR` to bind beside the holder).
    /// - Throws: `POSIXError` when no socket could be opened or bound.
    public convenience init() throws {
        var kernelBoundSocket: Int32?
        try self.init(kernelBoundSocket: &kernelBoundSocket)
        Self.closeAll(kernelBoundSocket)
    }

    /// Takes a port the kernel picks and no live `LoopbackPort` of this process has.
    /// - Parameter kernelBoundSocket: Set on Darwin to the socket the kernel gave the port to, for the caller
    ///   to listen on or close; nil on Linux, where that socket is the holder.
    private init(kernelBoundSocket: inout Int32?) throws {
        for _ in 0..<100 {
            let socket = try Self.boundSocket(port: 0, sharingPort: Self.holdsPortWithSocket)
            let port = Self.localPort(of: socket)
            guard LivePorts.shared.claim(port) else {
                // A stopped server of this process counts on this port refusing connections: ask for another.
                close(socket)
                continue
            }
            number = port
            holder = Self.holdsPortWithSocket ? socket : nil
            kernelBoundSocket = Self.holdsPortWithSocket ? nil : socket
            return
        }
        throw POSIXError(.EADDRINUSE)
    }

    /// Gives up the port (the server's own socket is closed by then): from then on the kernel may give it to anyone.
    deinit {
        Self.closeAll(holder)
        LivePorts.shared.release(number)
    }

    /// Takes a port and returns it with a socket listening on it.
    /// - Throws: `POSIXError` when no socket could be opened, bound or made to listen.
    static func withListeningSocket(backlog: Int32 = 64) throws -> (port: LoopbackPort, listener: Int32) {
        var kernelBoundSocket: Int32?
        let port = try LoopbackPort(kernelBoundSocket: &kernelBoundSocket)
        // On Linux the listener joins the holder; if that fails, `port` goes and gives the port up.
        let listener = try kernelBoundSocket ?? boundSocket(port: port.number, sharingPort: true)
        guard listen(listener, backlog) == 0 else { throw closing(listener) }
        return (port, listener)
    }

    /// The `errno` of binding a fresh socket, without `SO_REUSEADDR`, to 127.0.0.1:`port`; 0 if it binds
    /// (the socket is closed at once). For tests that check who holds a port.
    public static func bindError(port: UInt16) -> Int32 {
        do {
            let descriptor = try boundSocket(port: port, sharingPort: false)
            close(descriptor)
            return 0
        } catch {
            return (error as? POSIXError)?.code.rawValue ?? EIO
        }
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

/// The ports of the live ``LoopbackPort``s of this process, their servers stopped or not.
private final class LivePorts: @unchecked Sendable {
    // @unchecked Sendable: `ports` is reached only under `lock`.
    static let shared = LivePorts()
    private let lock = NSLock()
    private var ports: Set<UInt16> = []

    /// Adds `port`; false when a live `LoopbackPort` has it already.
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
