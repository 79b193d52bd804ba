import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// A TCP socket whose every wait is bounded by a deadline, so no call on it can hang past its timeout.
///
/// Connecting is non-blocking with `poll`; afterwards the socket blocks, with `SO_RCVTIMEO` and
/// `SO_SNDTIMEO` as the bound: a command then costs one `send` and one `recv`, not a `poll` more.
/// The receive timeout is shortened only when the time left before a deadline is shorter.
@available(watchOS, unavailable)
final class RedisSocket {
    private(set) var descriptor: Int32
    /// The receive buffer, allocated once per connection rather than per read.
    /// (Allocated only once connected: a failed init runs no deinit, which would leak it.)
    private let chunk: UnsafeMutableRawBufferPointer
    /// The `SO_RCVTIMEO` and `SO_SNDTIMEO` in force.
    private var receiveTimeout: Duration = .zero
    /// A deadline may be overshot by this much rather than pay a `setsockopt` per command.
    private static let slack = Duration.milliseconds(5)

    /// Connects to `host:port` (each address the name resolves to, in turn) before `deadline`.
    init(host: String, port: Int, deadline: ContinuousClock.Instant, timeout: Double) throws {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Darwin)
        hints.ai_socktype = SOCK_STREAM
        #else
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else { throw RedisError.unknownHost(host) }
        defer { freeaddrinfo(list) }
        var lastError: RedisError = .unknownHost(host)
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let address = candidate {
            candidate = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
            guard fd >= 0 else { lastError = .connectFailed(host: host, port: port, errno: errno); continue }
            do {
                try Self.connect(fd, address.pointee, deadline: deadline, timeout: timeout, host: host, port: port)
                descriptor = fd
                chunk = .allocate(byteCount: 65_536, alignment: 1)
                return
            } catch let error as RedisError {
                systemClose(fd)
                lastError = error
            }
        }
        throw lastError
    }

    deinit {
        close()
        chunk.deallocate()
    }

    private static func connect(_ fd: Int32, _ address: addrinfo, deadline: ContinuousClock.Instant, timeout: Double,
                                host: String, port: Int) throws {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        if systemConnect(fd, address.ai_addr, address.ai_addrlen) != 0 {
            guard errno == EINPROGRESS else { throw RedisError.connectFailed(host: host, port: port, errno: errno) }
            guard try wait(fd, for: Int16(POLLOUT), deadline: deadline) else {
                throw RedisError.timeout(operation: "connecting to \(host):\(port)", seconds: timeout)
            }
            var failure: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
            if failure != 0 { throw RedisError.connectFailed(host: host, port: port, errno: failure) }
        }
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
    }

    func close() {
        if descriptor >= 0 {
            systemClose(descriptor)
            descriptor = -1
        }
    }

    /// Writes all of `data` before `deadline`.
    func write(_ data: [UInt8], deadline: ContinuousClock.Instant, timeout: Double) throws {
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < raw.count {
                guard try setTimeout(until: deadline) else {
                    throw RedisError.timeout(operation: "sending a command", seconds: timeout)
                }
                #if canImport(Darwin)
                let sent = send(descriptor, raw.baseAddress! + offset, raw.count - offset, 0)
                #else
                let sent = send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                #endif
                if sent > 0 { offset += sent; continue }
                if sent < 0, errno == EINTR { continue }
                if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { continue } // the deadline decides
                throw RedisError.connectionClosed(errno: errno)
            }
        }
    }

    /// Reads what has arrived into `parser`, waiting until `deadline` for at least one byte.
    /// - Returns: false when the deadline passed with nothing read.
    func read(into parser: inout RESPParser, deadline: ContinuousClock.Instant) throws -> Bool {
        while true {
            guard try setTimeout(until: deadline) else { return false }
            let count = recv(descriptor, chunk.baseAddress, chunk.count, 0)
            if count > 0 {
                parser.append(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
                return true
            }
            if count == 0 { throw RedisError.connectionClosed(errno: 0) }
            if errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK { continue } // the deadline decides
            throw RedisError.connectionClosed(errno: errno)
        }
    }

    /// Makes the blocking calls on the socket give up at `deadline` (within ``slack``); false when it has passed.
    /// Send and receive timeouts are set alike.
    private func setTimeout(until deadline: ContinuousClock.Instant) throws -> Bool {
        let left = ContinuousClock.now.duration(to: deadline)
        if left <= .zero { return false }
        // Only when the time left differs from the timeout in force by more than the slack.
        if left < receiveTimeout - Self.slack || left > receiveTimeout + Self.slack {
            let (seconds, attoseconds) = left.components
            var value = timeval(tv_sec: .init(clamping: seconds), tv_usec: .init(max(1, attoseconds / 1_000_000_000_000)))
            for name in [SO_RCVTIMEO, SO_SNDTIMEO] {
                guard setsockopt(descriptor, SOL_SOCKET, name, &value, socklen_t(MemoryLayout<timeval>.size)) == 0 else {
                    throw RedisError.connectionClosed(errno: errno)
                }
            }
            receiveTimeout = left
        }
        return true
    }

    /// Waits until `fd` is ready for `events` or `deadline` passes; false on timeout.
    static func wait(_ fd: Int32, for events: Int16, deadline: ContinuousClock.Instant) throws -> Bool {
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            if left <= .zero { return false }
            let (seconds, attoseconds) = left.components
            // In 64 bits, and clamped before multiplying: a far deadline must not overflow.
            let milliseconds = Int32(clamping: min(seconds, Int64(Int32.max)) * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0, errno != EINTR { throw RedisError.connectionClosed(errno: errno) }
        }
    }
}

/// `connect(2)`, under a name that does not clash with ``RedisSocket``'s own `connect`.
private func systemConnect(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>!, _ length: socklen_t) -> Int32 {
    #if canImport(Darwin)
    return Darwin.connect(fd, address, length)
    #else
    return Glibc.connect(fd, address, length)
    #endif
}

/// `close(2)`, under a name that does not clash with ``RedisSocket/close()``.
private func systemClose(_ fd: Int32) {
    #if canImport(Darwin)
    _ = Darwin.close(fd)
    #else
    _ = Glibc.close(fd)
    #endif
}
