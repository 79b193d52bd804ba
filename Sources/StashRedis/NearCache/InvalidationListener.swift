import Foundation
import Stash

/// Keeps a near cache's memory layer coherent with Redis through `CLIENT TRACKING`.
///
/// One RESP3 connection of its own subscribes with `CLIENT TRACKING ON BCAST PREFIX namespace:`:
/// Redis then pushes an `invalidate` message naming every key of the namespace that any client
/// changes (or that expires or is evicted). A thread reads those pushes and drops the keys from
/// memory. While that connection is not established, or after it broke, the memory layer is
/// flushed and bypassed: a value may be cached only while tracking has been on, without a break,
/// since before the value was read from Redis.
///
/// A read admits its value to memory only with a ``Ticket`` taken before the read was sent, and
/// only if no invalidation of that key (nor a flush, nor a break) was processed since: so an
/// invalidation that overtakes a slower read can never be undone by that read's late insert.
@available(watchOS, unavailable)
final class InvalidationListener: Sendable {
    /// The state of the listener when a read was sent.
    struct Ticket {
        let epoch: UInt64
        let sequence: UInt64
    }

    private struct State {
        /// Whether tracking is on now; memory is used only then.
        var isTracking = false
        /// Moves at every connection, break and stop: a ticket of an older epoch admits nothing.
        var epoch: UInt64 = 0
        /// Counts invalidations (received or made by this process's own writes).
        var sequence: UInt64 = 0
        /// The sequence of the last flush of all keys.
        var flushedAt: UInt64 = 0
        /// The sequence of each key's last invalidation, kept while reads are in flight.
        var invalidatedAt: [String: UInt64] = [:]
        var readsInFlight = 0
        var stopped = false
        /// The descriptor the thread reads, so ``stop()`` can wake it.
        var socket: Int32 = -1
        /// How many times tracking was established; for tests.
        var connections = 0
    }

    private let state = Locked(State())
    private let pool: RedisConnectionPool
    private let prefix: String
    private let drop: @Sendable (String) -> Void
    private let flush: @Sendable () -> Void
    /// How long the connection may stay silent before a `PING` checks it.
    let heartbeat: TimeInterval

    /// Starts listening for invalidations of keys under `prefix`.
    /// - Parameters:
    ///   - drop: Removes one key (without the prefix) from memory.
    ///   - flush: Removes every key from memory.
    init(pool: RedisConnectionPool, prefix: String, heartbeat: TimeInterval,
         drop: @escaping @Sendable (String) -> Void, flush: @escaping @Sendable () -> Void) {
        self.pool = pool
        self.prefix = prefix
        self.heartbeat = heartbeat
        self.drop = drop
        self.flush = flush
        let thread = Thread { [self] in run() }
        thread.name = "StashRedis.invalidations"
        thread.start()
    }

    /// Ends the thread (within a moment) and turns the memory layer off.
    func stop() {
        state.withLock { state in
            state.stopped = true
            state.isTracking = false
            state.epoch += 1
            if state.socket >= 0 { _ = shutdown(state.socket, Int32(SHUT_RDWR)) }
        }
    }

    /// Called when a data connection failed (Redis down, restarted, or too slow): Redis may change
    /// or lose values without this process hearing of it, so memory is flushed and off, and the
    /// invalidation connection is made anew (tracking is on again once it is back).
    func restart() {
        state.withLock { state in
            if state.socket >= 0 { _ = shutdown(state.socket, Int32(SHUT_RDWR)) }
        }
        goOffline()
    }

    // MARK: For reads and writes

    /// Whether memory may be read now.
    var isTracking: Bool { state.withLock { $0.isTracking } }

    /// Starts a read from Redis whose value may be cached; nil when memory is off. Pair with ``endRead()``.
    func beginRead() -> Ticket? {
        state.withLock { state in
            state.readsInFlight += 1
            return state.isTracking ? Ticket(epoch: state.epoch, sequence: state.sequence) : nil
        }
    }

    /// Runs `insert` if nothing that could make the read's value stale was processed since `ticket`.
    /// `insert` runs under the lock, so an invalidation is either seen here or drops the value after.
    func admit(_ key: String, ticket: Ticket, _ insert: () -> Void) {
        state.withLock { state in
            guard state.isTracking, state.epoch == ticket.epoch, state.flushedAt <= ticket.sequence,
                  (state.invalidatedAt[key] ?? 0) <= ticket.sequence else { return }
            insert()
        }
    }

    func endRead() {
        state.withLock { state in
            state.readsInFlight -= 1
            if state.readsInFlight == 0 { state.invalidatedAt.removeAll(keepingCapacity: true) }
        }
    }

    /// Records that this process changed `keys` (nil: all), then drops them from memory: a read sent
    /// before the change cannot cache the old value afterwards.
    func invalidate(_ keys: [String]?) {
        state.withLock { state in
            state.sequence += 1
            if let keys {
                if state.readsInFlight > 0 { for key in keys { state.invalidatedAt[key] = state.sequence } }
            } else {
                state.flushedAt = state.sequence
            }
        }
        if let keys { keys.forEach(drop) } else { flush() }
    }

    // MARK: For tests

    /// Waits up to `seconds` until tracking is on and was established at least `count` times.
    func waitUntilTracking(connections count: Int, seconds: Double = 10) -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.isTracking && $0.connections >= count }) { return true }
            usleep(1_000)
        }
        return false
    }

    /// How many times tracking was established.
    var connections: Int { state.withLock { $0.connections } }

    // MARK: The thread

    private func run() {
        while !state.withLock({ $0.stopped }) {
            do {
                let connection = try pool.connect(resp3: true, name: "stash-invalidation")
                try listen(on: connection)
            } catch {
                // Broken, refused or backing off: memory is off until tracking is on again.
                goOffline()
                let pause = min(pool.configuration.maximumBackoff, max(pool.configuration.initialBackoff, 0.001))
                // useconds_t has 32 bits: a backoff configured past 71 minutes would trap in the conversion.
                usleep(useconds_t(min(pause, 3_600) * 1_000_000))
            }
        }
        goOffline()
    }

    private func listen(on connection: RedisConnection) throws {
        defer {
            state.withLock { $0.socket = -1 }
            connection.close()
        }
        let registered = state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.socket = connection.descriptor
            return true
        }
        guard registered else { return }
        let reply = try connection.send([["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", prefix]])
        if case .error(let message) = reply.first { throw RedisError.server(message) }
        handle(connection.takePushes())
        state.withLock { state in
            state.epoch += 1
            state.isTracking = !state.stopped
            state.connections += 1
        }
        var pingSent: ContinuousClock.Instant?
        while !state.withLock({ $0.stopped }) {
            let timeout = pingSent == nil ? heartbeat : pool.configuration.commandTimeout
            let deadline = (pingSent ?? .now) + .seconds(timeout)
            guard let value = try connection.nextValue(until: deadline) else {
                if pingSent != nil { throw RedisError.timeout(operation: "PING on the invalidation connection", seconds: timeout) }
                try connection.write(["PING"])
                pingSent = .now
                continue
            }
            switch value {
            case .push(let message): handle([message])
            case .error(let message): throw RedisError.server(message)
            default: pingSent = nil // the PONG
            }
        }
    }

    /// Drops the keys of `invalidate` messages (all keys for a flush, whose message has no keys).
    private func handle(_ messages: [[RESPValue]]) {
        for message in messages where message.first?.string == "invalidate" && message.count == 2 {
            if let names = message[1].array {
                let keys = names.compactMap { $0.data.map { String(decoding: $0.dropFirst(prefix.utf8.count), as: UTF8.self) } }
                invalidate(keys)
            } else {
                invalidate(nil)
            }
        }
    }

    private func goOffline() {
        state.withLock { state in
            if state.isTracking { state.epoch += 1 }
            state.isTracking = false
            state.sequence += 1
            state.flushedAt = state.sequence
        }
        flush()
    }
}
