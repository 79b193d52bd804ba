import Foundation

/// A small Redis client: a pool of connections that sends commands, one at a time or pipelined.
///
/// Every call returns or throws within ``RedisConfiguration/commandTimeout`` (plus
/// ``RedisConfiguration/connectTimeout`` when it has to connect), never later.
///
/// ```swift
/// let client = RedisClient(configuration: RedisConfiguration(port: 6379))
/// _ = try client.send(["SET", "greeting", "hello"])
/// let reply = try client.send(["GET", "greeting"])   // .bulkString(Data("hello".utf8))
/// ```
@available(watchOS, unavailable, message: "watchOS restricts BSD sockets to audio streaming apps (TN3135): Redis cannot be reached from a watch app")
public final class RedisClient: Sendable {
    /// The configuration the client connects with.
    public let configuration: RedisConfiguration
    let pool: RedisConnectionPool

    /// Creates a client; it connects lazily, on the first command.
    public init(configuration: RedisConfiguration) {
        self.configuration = configuration
        pool = RedisConnectionPool(configuration: configuration)
    }

    /// Sends one command and returns its reply.
    /// - Throws: ``RedisError``; an error reply is thrown as ``RedisError/server(_:)``.
    @discardableResult
    public func send(_ command: [any RESPArgument]) throws -> RESPValue {
        let reply = try pipeline([command])[0]
        if case .error(let message) = reply { throw RedisError.server(message) }
        return reply
    }

    /// Sends `commands` in one write on one connection and returns their replies in order
    /// (error replies as ``RESPValue/error(_:)``, so one failing command does not hide the others).
    /// - Throws: ``RedisError`` when the connection fails or times out.
    public func pipeline(_ commands: [[any RESPArgument]]) throws -> [RESPValue] {
        guard !commands.isEmpty else { return [] }
        return try pool.withConnection { try $0.send(commands) }
    }

    /// Closes the idle connections; the next command connects anew.
    public func closeIdleConnections() {
        pool.closeIdleConnections()
    }
}
