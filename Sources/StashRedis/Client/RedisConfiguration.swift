public import Foundation

/// Where Redis is and how to talk to it: address, credentials, database, timeouts, pool size, backoff.
///
/// ```swift
/// var config = try RedisConfiguration(url: "redis://app:secret@127.0.0.1:6379/2")
/// config.commandTimeout = 0.5
/// ```
/// Plain TCP only: TLS (`rediss://`) is not supported; run Redis on a private network or loopback.
public struct RedisConfiguration: Sendable, Equatable {
    /// The server's host name or address.
    public var host: String
    /// The server's TCP port.
    public var port: Int
    /// The ACL user for `AUTH`; nil with a password authenticates as `default`.
    public var username: String?
    /// The password for `AUTH`; nil sends no `AUTH`.
    public var password: String?
    /// The database `SELECT`ed on every connection.
    public var database: Int
    /// The longest a connection attempt (TCP connect plus the `HELLO`/`AUTH`/`SELECT` handshake) may take, in seconds.
    public var connectTimeout: TimeInterval
    /// The longest one command (or pipeline) may wait for its whole reply, in seconds.
    public var commandTimeout: TimeInterval
    /// The most connections the pool keeps open (the invalidation connection of a near cache is extra).
    public var poolSize: Int
    /// The first pause after a failed connection attempt, in seconds; it doubles per failure up to ``maximumBackoff``.
    public var initialBackoff: TimeInterval
    /// The longest pause between connection attempts, in seconds.
    public var maximumBackoff: TimeInterval

    /// A configuration for `host:port`.
    public init(host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil,
                database: Int = 0, connectTimeout: TimeInterval = 1, commandTimeout: TimeInterval = 1,
                poolSize: Int = 4, initialBackoff: TimeInterval = 0.05, maximumBackoff: TimeInterval = 2) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.poolSize = poolSize
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
    }

    /// Parses `redis://[user[:password]@]host[:port][/database]` (user and password percent-decoded).
    /// - Throws: ``RedisError/invalidURL(_:)`` for another scheme (`rediss://` too: no TLS), a bad port or database.
    public init(url text: String) throws {
        guard let components = URLComponents(string: text), components.scheme == "redis",
              let host = components.host, !host.isEmpty else { throw RedisError.invalidURL(text) }
        self.init(host: host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host)
        if let port = components.port {
            guard (1...65_535).contains(port) else { throw RedisError.invalidURL(text) }
            self.port = port
        }
        if let user = components.user, !user.isEmpty { username = user.removingPercentEncoding ?? user }
        if let password = components.password { self.password = password.removingPercentEncoding ?? password }
        if username != nil, password == nil { (username, password) = (nil, username) } // redis://secret@host
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let database = Int(path), database >= 0 else { throw RedisError.invalidURL(text) }
            self.database = database
        }
    }

    /// `redis://host:port/db`, without credentials: for error messages.
    public var displayURL: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "redis://\(host):\(port)/\(database)"
    }
}
