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
    /// The server refused the credentials (`WRONGPASS`, or `NOAUTH` when no password was configured)
    /// for `user` at `server` (its `redis://host:port/db`); `reply` is the server's text. Retrying will
    /// not help until the configuration or the server's ACL changes, so attempts back off like an outage's.
    case authenticationFailed(user: String, server: String, reply: String)
    /// All ``RedisConfiguration/poolSize`` connections stayed busy for `seconds`: this process is
    /// sending more than its pool carries. Nothing is known to be wrong with Redis or any connection.
    case noFreeConnection(seconds: Double, poolSize: Int)
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
        case .authenticationFailed(let user, let server, let reply):
            return "\(server) refused user '\(user)': \(reply) (check RedisConfiguration.username and .password)"
        case .noFreeConnection(let seconds, let poolSize):
            return "no free connection within \(seconds) s: all \(poolSize) of the pool were busy (raise RedisConfiguration.poolSize)"
        case .backingOff(let retryIn, let last):
            return "\(last); the next connection attempt is in \(String(format: "%.3f", retryIn)) s"
        case .invalidURL(let url): return "invalid Redis URL '\(url)' (expected redis://[user:password@]host[:port][/db])"
        }
    }

    /// Whether the connection that saw this error is unusable and must be closed.
    var breaksConnection: Bool {
        switch self {
        case .server, .noFreeConnection: return false
        default: return true
        }
    }
}

extension RedisError: LocalizedError {
    public var errorDescription: String? { description }
}
