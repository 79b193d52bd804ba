import Foundation
import Stash

/// Up to ``RedisConfiguration/poolSize`` connections, lent to one caller at a time; a failed
/// connection attempt pauses new attempts (doubling the pause up to a maximum), so a dead server
/// costs callers an immediate error instead of a connect timeout each.
@available(watchOS, unavailable)
final class RedisConnectionPool: Sendable {
    let configuration: RedisConfiguration
    private let permits: DispatchSemaphore
    private let state = Locked(State())

    private struct State {
        var idle: [RedisConnection] = []
        /// Failed connection attempts in a row.
        var failures = 0
        var nextAttempt = ContinuousClock.now
        var lastFailure = ""
    }

    init(configuration: RedisConfiguration) {
        self.configuration = configuration
        permits = DispatchSemaphore(value: max(1, configuration.poolSize))
    }

    deinit {
        state.withLock { $0.idle.forEach { $0.close() } }
    }

    /// Runs `body` with a connection. A connection whose call fails with a broken connection is
    /// closed; if it had been idle in the pool (the server may have restarted meanwhile) `body`
    /// runs once more on a new connection: every command Stash sends may safely be sent twice.
    func withConnection<Result>(_ body: (RedisConnection) throws -> Result) throws -> Result {
        guard permits.wait(timeout: .now() + configuration.commandTimeout) == .success else {
            throw RedisError.noFreeConnection(seconds: configuration.commandTimeout, poolSize: max(1, configuration.poolSize))
        }
        defer { permits.signal() }
        var (connection, reused) = try checkOut()
        while true {
            do {
                let result = try body(connection)
                state.withLock { $0.idle.append(connection) }
                return result
            } catch let error as RedisError where error.breaksConnection {
                connection.close()
                guard reused, case .connectionClosed = error else { throw error }
                (connection, reused) = (try connect(), false)
            } catch {
                state.withLock { $0.idle.append(connection) }
                throw error
            }
        }
    }

    /// Closes every idle connection (the next call connects anew).
    func closeIdleConnections() {
        let idle = state.withLock { state in
            defer { state.idle.removeAll() }
            return state.idle
        }
        idle.forEach { $0.close() }
    }

    private func checkOut() throws -> (RedisConnection, reused: Bool) {
        if let connection = state.withLock({ $0.idle.popLast() }) { return (connection, true) }
        return (try connect(), false)
    }

    /// How long until a new connection attempt is allowed (zero when it is now).
    var timeUntilNextAttempt: Duration {
        let now = ContinuousClock.now
        return state.withLock { now < $0.nextAttempt ? now.duration(to: $0.nextAttempt) : .zero }
    }

    /// Opens a connection, unless attempts are paused after a failure.
    func connect(resp3: Bool = false, name: String = "stash") throws -> RedisConnection {
        let now = ContinuousClock.now
        let paused: (Duration, String)? = state.withLock { state in
            now < state.nextAttempt ? (now.duration(to: state.nextAttempt), state.lastFailure) : nil
        }
        if let (left, last) = paused {
            throw RedisError.backingOff(retryIn: Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18, last: last)
        }
        do {
            let connection = try RedisConnection(configuration: configuration, resp3: resp3, name: name)
            state.withLock { $0.failures = 0 }
            return connection
        } catch let error as RedisError {
            // Every failure pauses new attempts, a refusal too: a wrong password retried at full speed
            // is a connection storm (each attempt costs the server a connection and an ACL check).
            state.withLock { state in
                state.failures += 1
                let pause = min(configuration.maximumBackoff,
                                configuration.initialBackoff * pow(2, Double(min(state.failures - 1, 30))))
                state.nextAttempt = ContinuousClock.now + .seconds(pause)
                state.lastFailure = error.description
            }
            throw error
        }
    }
}
