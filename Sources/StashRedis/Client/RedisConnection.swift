import Foundation

/// One connection to Redis: handshake (`HELLO`, `AUTH`, `SELECT`), then commands, pipelined.
///
/// Not thread-safe: the pool lends it to one caller at a time. After any error but a server's
/// error reply, the connection is out of step with the server and must be closed.
@available(watchOS, unavailable)
final class RedisConnection {
    private let socket: RedisSocket
    private var parser = RESPParser()
    let configuration: RedisConfiguration
    /// The server's id for this connection (`CLIENT ID`), for `CLIENT TRACKING … REDIRECT` and `CLIENT KILL`.
    private(set) var clientID: Int64 = 0
    /// RESP3 push messages that arrived among replies; the invalidation listener reads them.
    private(set) var pendingPushes: [[RESPValue]] = []

    /// Connects and runs the handshake within ``RedisConfiguration/connectTimeout``.
    /// - Parameter resp3: Speak RESP3 (`HELLO 3`), which push messages need.
    init(configuration: RedisConfiguration, resp3: Bool = false, name: String = "stash") throws {
        self.configuration = configuration
        let deadline = ContinuousClock.now + .seconds(configuration.connectTimeout)
        socket = try RedisSocket(host: configuration.host, port: configuration.port,
                                 deadline: deadline, timeout: configuration.connectTimeout)
        var handshake: [[any RESPArgument]] = []
        if resp3 {
            var hello: [any RESPArgument] = ["HELLO", "3"]
            if let password = configuration.password { hello += ["AUTH", configuration.username ?? "default", password] }
            handshake.append(hello + ["SETNAME", name])
        } else {
            if let password = configuration.password {
                handshake.append(configuration.username.map { ["AUTH", $0, password] } ?? ["AUTH", password])
            }
            handshake.append(["CLIENT", "SETNAME", name])
        }
        if configuration.database != 0 { handshake.append(["SELECT", configuration.database]) }
        handshake.append(["CLIENT", "ID"])
        let replies = try send(handshake, deadline: deadline, timeout: configuration.connectTimeout, operation: "handshake")
        for reply in replies {
            guard case .error(let message) = reply else { continue }
            if message.hasPrefix("WRONGPASS") || message.hasPrefix("NOAUTH") {
                throw RedisError.authenticationFailed(user: configuration.username ?? "default",
                                                      server: configuration.displayURL, reply: message)
            }
            throw RedisError.server(message)
        }
        clientID = replies.last?.integer ?? 0
    }

    func close() { socket.close() }

    /// The socket's descriptor, so another thread can `shutdown(2)` it to wake a blocked read.
    var descriptor: Int32 { socket.descriptor }

    /// Sends `commands` in one write and reads their replies, in order, within ``RedisConfiguration/commandTimeout``.
    /// An error reply is returned as ``RESPValue/error(_:)``, not thrown.
    func send(_ commands: [[any RESPArgument]]) throws -> [RESPValue] {
        let timeout = configuration.commandTimeout
        return try send(commands, deadline: .now + .seconds(timeout), timeout: timeout, operation: commands.first.map(Self.name) ?? "")
    }

    private func send(_ commands: [[any RESPArgument]], deadline: ContinuousClock.Instant, timeout: Double,
                      operation: String) throws -> [RESPValue] {
        try socket.write(RESPEncoder.encode(commands), deadline: deadline, timeout: timeout)
        var replies: [RESPValue] = []
        replies.reserveCapacity(commands.count)
        while replies.count < commands.count {
            guard let reply = try nextValue(until: deadline) else {
                throw RedisError.timeout(operation: operation, seconds: timeout)
            }
            if case .push(let message) = reply { pendingPushes.append(message) } else { replies.append(reply) }
        }
        return replies
    }

    /// The next value the server sends (a reply or a push), or nil if none arrived before `deadline`.
    func nextValue(until deadline: ContinuousClock.Instant) throws -> RESPValue? {
        while true {
            if let value = try parser.next() { return value }
            guard try socket.read(into: &parser, deadline: deadline) else { return nil }
        }
    }

    /// Hands over the push messages received so far.
    func takePushes() -> [[RESPValue]] {
        defer { pendingPushes.removeAll() }
        return pendingPushes
    }

    /// The command's name, for error messages (never its arguments: they may hold values or passwords).
    private static func name(_ command: [any RESPArgument]) -> String {
        command.first.map { String(decoding: $0.respBytes, as: UTF8.self) } ?? ""
    }
}
