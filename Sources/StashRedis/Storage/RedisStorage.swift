public import Foundation
public import Stash

/// A typed key-value store on Redis, shared by every process that opens the same namespace.
///
/// ```swift
/// let sessions = try RedisStorage<Session>(
///     configuration: RedisConfiguration(url: "redis://127.0.0.1:6379/0"),
///     namespace: "sessions",
///     expiry: .seconds(3600),
///     transformer: TransformerFactory.forCodable(ofType: Session.self)
/// )
/// try sessions.setObject(session, forKey: session.id)
/// let again = try await sessions.async.object(forKey: session.id)
/// ```
/// A value is stored as the transformer's bytes, unchanged, under the Redis key ``keyPrefix`` + key
/// (`namespace:key` for a namespace without `:` or `%`);
/// its expiry is Redis's own (`SET … PXAT`), so Redis removes it when it expires: unlike the disk
/// store, an expired value is not returned flagged but is gone (`StorageError.notFound`).
/// Every failure to reach Redis is `StorageError.io(operation:path:underlying:)` whose cause is a
/// ``RedisError``, thrown within the configured timeouts.
@available(watchOS, unavailable, message: "watchOS restricts BSD sockets to audio streaming apps (TN3135): Redis cannot be reached from a watch app")
public final class RedisStorage<T: Sendable>: RedisStore, Sendable {
    /// The client (and its pool of connections) the store talks through; shared by its views.
    public let client: RedisClient
    /// The namespace, as given.
    public let namespace: String
    /// The prefix of every Redis key of the store: the namespace (in NFC) with `%` and `:` escaped as
    /// `%25` and `%3A`, then one `:`. It holds no other `:`, so no namespace's keys start with another's
    /// prefix: namespace `a` never sees the keys of `a:b`, and `a` + `b:c` is not `a:b` + `c`.
    public let keyPrefix: String
    /// The expiry of values written without one.
    public let expiry: Expiry
    /// Converts values to the stored bytes and back.
    public let transformer: Transformer<T>
    let now: @Sendable () -> Date
    let observers: RedisObservers

    /// Opens the store `namespace` on the Redis server `configuration` names (connecting lazily).
    /// - Parameters:
    ///   - configuration: The Redis server and its timeouts.
    ///   - namespace: The key prefix; ``removeAll()`` and ``allKeys`` touch only keys under it.
    ///   - expiry: The default expiry, resolved to an absolute date when a value is written.
    ///   - transformer: Converts values to the stored bytes and back.
    ///   - now: The clock `.seconds(n)` counts from; Redis's own clock decides when a value goes.
    /// - Throws: `StorageError.invalidName(_:)` for an empty namespace or one with a NUL byte.
    public convenience init(configuration: RedisConfiguration, namespace: String, expiry: Expiry = .never,
                            transformer: Transformer<T>, now: @escaping @Sendable () -> Date = { Date() }) throws {
        try self.init(client: RedisClient(configuration: configuration), namespace: namespace, expiry: expiry,
                      transformer: transformer, now: now)
    }

    /// Opens the store `namespace` through an existing client (sharing its connections).
    public convenience init(client: RedisClient, namespace: String, expiry: Expiry = .never,
                            transformer: Transformer<T>, now: @escaping @Sendable () -> Date = { Date() }) throws {
        guard !namespace.isEmpty, !namespace.contains("\0") else { throw StorageError.invalidName(namespace) }
        self.init(client: client, namespace: namespace, expiry: expiry, transformer: transformer, now: now,
                  observers: RedisObservers(asyncLimit: client.configuration.poolSize))
    }

    init(client: RedisClient, namespace: String, expiry: Expiry, transformer: Transformer<T>,
         now: @escaping @Sendable () -> Date, observers: RedisObservers) {
        self.client = client
        self.namespace = namespace
        keyPrefix = Self.encodedNamespace(namespace) + ":"
        self.expiry = expiry
        self.transformer = transformer
        self.now = now
        self.observers = observers
    }

    /// The asynchronous API: completion handlers and `async` functions, run concurrently on the pool
    /// (calls on one key keep their submission order).
    public var async: RedisAsyncStorage<T> { RedisAsyncStorage(self, scheduler: observers.scheduler) }

    /// A view of the same namespace whose values are `U`: same client, same observers.
    public func transform<U: Sendable>(transformer: Transformer<U>) -> RedisStorage<U> {
        RedisStorage<U>(client: client, namespace: namespace, expiry: expiry, transformer: transformer, now: now, observers: observers)
    }

    // MARK: StorageAware

    /// Every key of the namespace, listed with `SCAN` (never `KEYS`, which would block the server).
    ///
    /// The protocol's `allKeys` cannot throw: when Redis fails it is empty; call ``keys()`` to see the error.
    public var allKeys: [String] { (try? keys()) ?? [] }

    public func entry(forKey key: String) throws -> Entry<T> {
        try fetch(forKey: key).entry
    }

    /// The value alone, with one `GET`: Redis never returns an expired value, so no expiry is needed.
    public func object(forKey key: String) throws -> T {
        let name = redisKey(key)
        let reply = try call("GET", name) { try $0.send(["GET", name]) }
        guard let data = reply.data else { throw StorageError.notFound(key: key) }
        return try transformer.decode(data)
    }

    /// Whether the key exists, with one `EXISTS` (Redis never counts an expired key).
    public func existsObject(forKey key: String) throws -> Bool {
        let name = redisKey(key)
        return try call("EXISTS", name) { try $0.send(["EXISTS", name]) } == .integer(1)
    }

    public func setObject(_ object: T, forKey key: String, expiry: Expiry? = nil) throws {
        let data = try transformer.encode(object)
        try write(data, forKey: key, expiry: expiry)
    }

    public func removeObject(forKey key: String) throws {
        let key = canonicalKey(key)
        let name = redisKey(key)
        try call("UNLINK", name) { try $0.send(["UNLINK", name]) }
        observers.publish(.remove(keys: [key]))
    }

    /// Removes every key of the namespace (and nothing else), in batches found with `SCAN`.
    public func removeAll() throws {
        var removed: [String] = []
        try scan { batch in
            _ = try call("UNLINK", keyPrefix + "*") { try $0.send(["UNLINK"] + batch.map { redisKey($0) }) }
            removed += batch
        }
        observers.publish(.removeAll(keys: removed))
    }

    /// Redis removes expired values itself, so there is nothing to do; observers are still told.
    public func removeExpiredObjects() throws {
        observers.publish(.removeExpired)
    }

    // MARK: Beyond StorageAware

    /// Every key of the namespace, listed with `SCAN`.
    /// - Throws: `StorageError.io(operation:path:underlying:)` when Redis fails.
    public func keys() throws -> [String] {
        var keys: [String] = []
        try scan { keys += $0 }
        return keys
    }

    /// The Redis key of `key`: ``keyPrefix``, then the key in Unicode's canonical composition (NFC).
    public func redisKey(_ key: String) -> String {
        keyPrefix + canonicalKey(key)
    }

    /// The namespace as it appears in Redis keys: NFC, with `%` and `:` percent-escaped (and nothing
    /// else, so an ordinary namespace reads as itself). Injective, and free of `:`.
    static func encodedNamespace(_ namespace: String) -> String {
        var encoded = ""
        for scalar in canonicalKey(namespace).unicodeScalars {
            switch scalar {
            case "%": encoded += "%25"
            case ":": encoded += "%3A"
            default: encoded.unicodeScalars.append(scalar)
            }
        }
        return encoded
    }

    // MARK: Plumbing (shared with the near cache)


    /// `date` in whole milliseconds since 1970, rounded up (a value must not outlive its expiry), in 64
    /// bits: milliseconds passed 2^31 in January 1970. `date` is before `Date.distantFuture`, which is
    /// about 6.4e16 ms, far inside `Int64`.
    static func unixMilliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.up))
    }

    /// The date of a time in milliseconds since 1970 (as `PEXPIRETIME` answers).
    static func date(unixMilliseconds milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The entry for `key` and the size of its bytes; value and expiry are read in one `MULTI`/`EXEC`,
    /// with the value of `alsoRead` (the near cache's generation key) when one is given.
    ///
    /// A server over `maxmemory` refuses every command inside `MULTI`, reads too (`EXECABORT`): then
    /// the same reads go as a plain pipeline, value first, so a read still works on a full server
    /// (value and expiry may then come from two writes; a near cache is told of the second by its
    /// invalidation, and a generation read after the value can only be newer, so a swap in between
    /// flushes rather than hides).
    func fetch(forKey key: String, alsoRead extra: String? = nil) throws -> (entry: Entry<T>, size: Int, extra: Data?) {
        let name = redisKey(key)
        var reads: [[any RESPArgument]] = [["GET", name], ["PEXPIRETIME", name]]
        if let extra { reads.append(["GET", extra]) }
        var results = try call("GET", name) { client -> [RESPValue] in
            let replies = try client.pipeline([["MULTI"]] + reads + [["EXEC"]])
            if case .error(let message)? = replies.last, message.hasPrefix("EXECABORT") { return try client.pipeline(reads) }
            return replies.last?.array ?? []
        }
        guard results.count == reads.count else {
            throw io("GET", name, RedisError.protocolError("unexpected reply to \(reads.count) reads: \(results)"))
        }
        if results.count == 3, case .error = results[2] { results[2] = .null } // no generation: flushes, never hides
        if case .error(let message) = results[0] { throw io("GET", name, RedisError.server(message)) }
        guard let data = results[0].data else { throw StorageError.notFound(key: key) }
        let object = try transformer.decode(data)
        let expiry: Expiry
        if let milliseconds = results[1].integer, milliseconds > 0 {
            expiry = .date(Self.date(unixMilliseconds: milliseconds))
        } else {
            expiry = .never
        }
        let isExpired = if case .date(let date) = expiry { now() >= date } else { false }
        return (Entry(object: object, expiry: expiry, isExpired: isExpired), data.count, extra == nil ? nil : results[2].data)
    }

    /// Stores `data` (the transformer's bytes) for `key`: `SET … PXAT` with the absolute expiry in milliseconds.
    /// A value whose expiry has already passed is not stored: the key is removed, as Redis would remove it.
    func write(_ data: Data, forKey key: String, expiry: Expiry?) throws {
        let key = canonicalKey(key)
        let date = (expiry ?? self.expiry).resolved(from: now())
        guard date > now() else {
            try removeObject(forKey: key)
            return
        }
        let name = keyPrefix + key // already canonical
        var command: [any RESPArgument] = ["SET", name, data]
        if date < .distantFuture { command += ["PXAT", Self.unixMilliseconds(date)] }
        // Key observers get the replaced value too: `SET … GET` returns it in the same command.
        let wantsPrevious = observers.hasKeyObservers(key)
        if wantsPrevious { command.append("GET") }
        let reply = try call("SET", name) { try $0.send(command) }
        observers.publish(.set(key: key, value: data, previous: wantsPrevious ? reply.data : nil))
    }

    /// Calls `body` with every batch of keys (without the prefix) that `SCAN` finds in the namespace.
    private func scan(_ body: ([String]) throws -> Void) throws {
        let pattern = Self.escapeGlob(keyPrefix) + "*"
        var cursor = "0"
        repeat {
            let reply = try call("SCAN", pattern) { try $0.send(["SCAN", cursor, "MATCH", pattern, "COUNT", 1000]) }
            guard let parts = reply.array, parts.count == 2, let next = parts[0].string, let names = parts[1].array else {
                throw io("SCAN", pattern, RedisError.protocolError("unexpected reply \(reply)"))
            }
            cursor = next
            let prefixLength = keyPrefix.utf8.count
            let keys = names.compactMap { $0.data.map { String(decoding: $0.dropFirst(prefixLength), as: UTF8.self) } }
            if !keys.isEmpty { try body(keys) }
        } while cursor != "0"
    }

    /// `pattern` with the glob characters of `SCAN … MATCH` escaped, so the namespace matches literally.
    static func escapeGlob(_ text: String) -> String {
        var escaped = ""
        for character in text {
            if "*?[]\\^-".contains(character) { escaped.append("\\") }
            escaped.append(character)
        }
        return escaped
    }

    /// Runs a Redis call, turning its failures into `StorageError.io(operation:path:underlying:)`;
    /// `path` is the Redis key (or pattern) it works on.
    @discardableResult
    func call<Result>(_ operation: String, _ path: String, _ body: (RedisClient) throws -> Result) throws -> Result {
        do {
            return try body(client)
        } catch let error as RedisError {
            throw io(operation, path, error)
        }
    }

    /// The server is named in `operation` and the Redis key (or the `SCAN` pattern) in `path`: the key
    /// is where the value lives inside the server, as a file's path is inside a disk store.
    /// Reads as "Redis GET on redis://127.0.0.1:6379/0 failed for profiles:me: …".
    private func io(_ operation: String, _ path: String, _ error: RedisError) -> StorageError {
        StorageError.io(operation: "Redis \(operation) on \(client.configuration.displayURL)", path: path, underlying: error)
    }
}

/// The key as stored: canonically equivalent spellings ("é" and "e" + U+0301) are one key, as in Swift.
/// An ASCII key is its own composition: the common case skips Foundation's (costly) normalization.
/// A free function, not a static member of the generic store: a memory hit then looks up no type metadata.
func canonicalKey(_ key: String) -> String {
    let isASCII = key.utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy { $0 < 0x80 } }
        ?? key.utf8.allSatisfy { $0 < 0x80 }
    return isASCII ? key : key.precomposedStringWithCanonicalMapping
}
