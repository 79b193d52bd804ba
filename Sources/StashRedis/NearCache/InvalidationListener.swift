import Foundation
import Stash

/// Keeps a near cache's memory layer coherent with Redis through `CLIENT TRACKING`.
///
/// One RESP3 connection of its own subscribes with `CLIENT TRACKING ON BCAST PREFIX <keyPrefix>`:
/// Redis then pushes an `invalidate` message naming every key of the namespace that any client
/// changes (or that expires or is evicted). A thread reads those pushes and drops the keys from
/// memory. While that connection is not established, or after it broke, the memory layer is
/// flushed and bypassed: a value may be cached only while tracking has been on, without a break,
/// since before the value was read from Redis.
///
/// A read admits its value to memory only with a ``Ticket`` taken before the read was sent, and
/// only if no invalidation of that key (nor a flush, nor a break) was processed since: so an
/// invalidation that overtakes a slower read can never be undone by that read's late insert.
///
/// `SWAPDB` sends no invalidation, so the database's generation token (``generationKey``) is read
/// every heartbeat and with every read's value: another token flushes memory (Docs/Redis.md lists
/// which whole-dataset changes are noticed, and how soon).
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
        /// The database's generation token (``generationKey``) as last read; memory holds only values
        /// read while Redis had this one.
        var generation: Data?
        /// False when the ACL forbids the generation key (`NOPERM`): swaps then go unnoticed.
        var generationReadable = true
        /// Why memory is off: the last failure of the invalidation connection (nil while tracking).
        var problem: RedisError?
    }

    /// The key holding the database's generation: a random token set once (`SET … NX`), so a database
    /// swapped in (`SWAPDB`), which Redis announces to no tracking client, shows another token or none.
    /// It has no `:`, so it lies in no namespace (every namespace's keys start with `<namespace>:`).
    static let generationKey = "stash-near-cache-generation"

    private let state = Locked(State())
    private let pool: RedisConnectionPool
    private let prefix: String
    private let drop: @Sendable (String) -> Void
    private let flush: @Sendable () -> Void
    /// How often the connection checks the database's generation (a `GET` that also proves it alive).
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

    /// Runs `insert` if nothing that could make the read's value stale was processed since `ticket`,
    /// and the read saw the database generation memory holds (`generation`, read in the same
    /// transaction as the value). `insert` runs under the lock, so an invalidation is either seen here
    /// or drops the value after. A read that saw another generation flushes memory instead: the
    /// database was swapped or flushed, and until the listener adopts the new generation (within one
    /// heartbeat) nothing is admitted.
    func admit(_ key: String, ticket: Ticket, generation: Data?, _ insert: () -> Void) {
        let swapped = state.withLock { state -> Bool in
            guard state.isTracking else { return false }
            guard !state.generationReadable || state.generation == generation else {
                state.sequence += 1
                state.flushedAt = state.sequence
                return true
            }
            guard state.epoch == ticket.epoch, state.flushedAt <= ticket.sequence,
                  (state.invalidatedAt[key] ?? 0) <= ticket.sequence else { return false }
            insert()
            return false
        }
        if swapped { flush() }
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

    /// Whether reads should fetch the generation key with their value (not when the ACL forbids it:
    /// one forbidden command would abort the read's whole transaction).
    var readsGeneration: Bool { state.withLock { $0.generationReadable } }

    /// Why memory is off now (nil while tracking is on).
    var problem: RedisError? { state.withLock { $0.problem } }

    // MARK: The thread

    private func run() {
        // Failures in a row since tracking was last on: a connection that is made but then refused
        // tracking (an ACL without `CLIENT`) must back off too, though the pool saw a success.
        var failures = 0
        while !state.withLock({ $0.stopped }) {
            do {
                let connection = try pool.connect(resp3: true, name: "stash-invalidation")
                try listen(on: connection, established: { failures = 0 })
            } catch {
                // Broken, refused or backing off: memory is off until tracking is on again.
                goOffline(because: error)
                failures += 1
                let configuration = pool.configuration
                let own = min(configuration.maximumBackoff, max(configuration.initialBackoff, 0.001) * pow(2, Double(min(failures - 1, 30))))
                let pool = pool.timeUntilNextAttempt
                let poolSeconds = Double(pool.components.seconds) + Double(pool.components.attoseconds) / 1e18
                // Asleep at most `maximumBackoff`; a break right after a long healthy stretch is retried at once.
                let pause = failures == 1 && poolSeconds == 0 ? 0.001 : max(own, min(poolSeconds, configuration.maximumBackoff))
                // useconds_t has 32 bits: a backoff configured past 71 minutes would trap in the conversion.
                usleep(useconds_t(min(pause, 3_600) * 1_000_000))
            }
        }
        goOffline(because: nil)
    }

    private func listen(on connection: RedisConnection, established: () -> Void) throws {
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
        // Tracking first, then the generation: a swap in between is seen as a new generation later.
        let generation = try currentGeneration(on: connection)
        handle(connection.takePushes())
        state.withLock { state in
            state.epoch += 1
            state.isTracking = !state.stopped
            state.connections += 1
            state.generation = generation
            state.problem = nil
        }
        established()
        var lastCheck = ContinuousClock.now
        while !state.withLock({ $0.stopped }) {
            if let value = try connection.nextValue(until: lastCheck + .seconds(heartbeat)) {
                switch value {
                case .push(let message): handle([message])
                case .error(let message): throw RedisError.server(message)
                default: break
                }
                continue
            }
            // Every heartbeat: the generation's `GET` checks that the connection is alive (within the
            // command timeout) and that the database was not swapped meanwhile.
            let generation = try currentGeneration(on: connection)
            handle(connection.takePushes())
            adopt(generation)
            lastCheck = .now
        }
    }

    /// The database's generation token, created (`SET … NX`, a random UUID) when there is none. Nil
    /// when the user's ACL forbids the key, or when there is none and none can be written (a full
    /// server with `noeviction`, a read-only replica): memory still works, and swaps are noticed once
    /// a token exists. Only a `GET` while one exists, as a full server refuses every `SET`.
    private func currentGeneration(on connection: RedisConnection) throws -> Data? {
        let key = Self.generationKey
        let read = try connection.send([["GET", key]])
        if case .error(let message) = read.first { return try refused(message) }
        if let token = read.first?.data { return token }
        let replies = try connection.send([["SET", key, UUID().uuidString, "NX"], ["GET", key]])
        if case .error(let message) = replies.last { return try refused(message) }
        return replies.last?.data // nil when the SET was refused (OOM, READONLY)
    }

    /// A refusal to read the generation key: the ACL's `NOPERM` turns generations off; anything else is thrown.
    private func refused(_ message: String) throws -> Data? {
        guard message.hasPrefix("NOPERM") else { throw RedisError.server(message) }
        state.withLock { $0.generationReadable = false }
        return nil
    }

    /// Takes `generation` as the database's; another one than memory's means a swap: memory is flushed.
    private func adopt(_ generation: Data?) {
        let changed = state.withLock { state -> Bool in
            guard state.generation != generation else { return false }
            state.generation = generation
            state.sequence += 1
            state.flushedAt = state.sequence
            return true
        }
        if changed { flush() }
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

    private func goOffline(because error: (any Error)? = nil) {
        state.withLock { state in
            if let error { state.problem = error as? RedisError ?? .protocolError("\(error)") }
            if state.isTracking { state.epoch += 1 }
            state.isTracking = false
            state.sequence += 1
            state.flushedAt = state.sequence
        }
        flush()
    }
}
