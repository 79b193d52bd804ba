public import Foundation

/// Why a Redis call failed. ``RedisStorage`` wraps it as the cause of `StorageError.io`.
public enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The TCP connection could not be made; `errno` is the system's reason (`ECONNREFUSED`…).
    case connectFailed(host: String, port: Int, errno: Int32)
    /// The host name did not resolve.
    case unknownHost(String)
    /// Nothing (or not all) of the reply arrived within the timeout; the connection is dropped.
    case timeout(operation: String, seconds: Double)
    /// The server closed the connection, or a read or write on it failed.
    case connectionClosed(errno: Int32)
    /// The server answered with an error reply, such as `WRONGPASS …` or `WRONGTYPE …`.
    case server(String)
    /// The bytes from the server are no RESP, or not the reply the command expects.
    case protocolError(String)
    /// A call came during the pause after a failed connection attempt; `last` is that failure.
    case backingOff(retryIn: Double, last: String)
    /// A `redis://` URL that does not parse.
    case invalidURL(String)

    public var description: String {
        switch self {
        case .connectFailed(let host, let port, let code):
            return "cannot connect to \(host):\(port): \(String(cString: strerror(code))) (errno \(code))"
        case .unknownHost(let host): return "unknown host '\(host)'"
        case .timeout(let operation, let seconds): return "\(operation) timed out after \(seconds) s"
        case .connectionClosed(let code):
            return code == 0 ? "the server closed the connection" : "the connection failed: \(String(cString: strerror(code))) (errno \(code))"
        case .server(let message): return "Redis replied: \(message)"
        case .protocolError(let message): return "protocol error: \(message)"
        case .backingOff(let retryIn, let last):
            return "Redis is unreachable (\(last)); next attempt in \(String(format: "%.3f", retryIn)) s"
        case .invalidURL(let url): return "invalid Redis URL '\(url)' (expected redis://[user:password@]host[:port][/db])"
        }
    }

    /// Whether the connection that saw this error is unusable and must be closed.
    var breaksConnection: Bool {
        switch self {
        case .server: return false
        default: return true
        }
    }
}

extension RedisError: LocalizedError {
    public var errorDescription: String? { description }
}
