import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The floor of a Redis call: one blocking loopback socket, commands encoded once up front, and a
/// reply read until its known length has arrived. No parsing, no decoding, no pool, no lock.
final class RawRedis: @unchecked Sendable {
    // @unchecked Sendable: each instance is used by one thread at a time (the two-client scenario gives each thread its own).
    private let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 1 << 20)

    init(port: Int) throws {
        fd = socket(AF_INET, streamSocketType, 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchError("cannot connect to redis on port \(port)") }
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// A command in RESP, encoded once.
    static func encode(_ arguments: [Data]) -> [UInt8] {
        var out = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            out += Array("$\(argument.count)\r\n".utf8) + argument + [13, 10]
        }
        return out
    }

    /// Sends `commands` (already encoded, concatenated) and reads `replyBytes` bytes of replies.
    func call(_ commands: [UInt8], replyBytes: Int) throws {
        var sent = 0
        while sent < commands.count {
            let count = commands.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, 0) }
            guard count > 0 else { throw BenchError("send failed") }
            sent += count
        }
        var received = 0
        while received < replyBytes {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
            guard count > 0 else { throw BenchError("recv failed") }
            received += count
        }
    }
}

/// `SOCK_STREAM` as `socket(2)` takes it: an enum on Glibc, an `Int32` on Darwin.
#if canImport(Darwin)
let streamSocketType = SOCK_STREAM
#else
let streamSocketType = Int32(SOCK_STREAM.rawValue)
#endif
