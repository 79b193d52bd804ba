import CSQLite
import Foundation
import Synchronization

/// SQLite as an app developer sets it up for a key-value cache (as GRDB and Bodega do): one table
/// `kv(key TEXT PRIMARY KEY, value BLOB, expiry REAL)`, WAL, `synchronous=NORMAL` (`FULL` when
/// durable), prepared statements made once and reused, one implicit transaction per statement.
///
/// One connection, used by one thread at a time (a `Mutex`), like GRDB's `DatabaseQueue`.
// @unchecked: the connection and its statements are only touched inside `lock`.
final class SQLiteStore: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let path: String
    private let lock = Mutex(())
    private var db: OpaquePointer?
    private var upsert: OpaquePointer?
    private var select: OpaquePointer?
    private var exists: OpaquePointer?
    private var delete: OpaquePointer?
    private var deleteExpired: OpaquePointer?
    private var begin: OpaquePointer?
    private var commit: OpaquePointer?
    private var range: OpaquePointer?
    private var beginImmediate: OpaquePointer?
    private var updateValue: OpaquePointer?

    /// Opens (creating if needed) the database file at `path`.
    init(path: String, durable: Bool = false) throws {
        self.path = path
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            defer { sqlite3_close(db) }
            throw Failure(description: "sqlite3_open_v2(\(path)): \(String(cString: sqlite3_errmsg(db)))")
        }
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=\(durable ? "FULL" : "NORMAL")")
        try execute("CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL, expiry REAL)")
        upsert = try prepare("INSERT INTO kv(key, value, expiry) VALUES(?1, ?2, ?3) "
            + "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expiry = excluded.expiry")
        select = try prepare("SELECT value, expiry FROM kv WHERE key = ?1")
        exists = try prepare("SELECT expiry FROM kv WHERE key = ?1")
        delete = try prepare("DELETE FROM kv WHERE key = ?1")
        deleteExpired = try prepare("DELETE FROM kv WHERE expiry < ?1")
        begin = try prepare("BEGIN")
        commit = try prepare("COMMIT")
        range = try prepare("SELECT key, value FROM kv WHERE key >= ?1 AND key < ?2 ORDER BY key")
        beginImmediate = try prepare("BEGIN IMMEDIATE")
        updateValue = try prepare("UPDATE kv SET value = ?2 WHERE key = ?1")
    }

    deinit {
        for statement in [upsert, select, exists, delete, deleteExpired, begin, commit, range, beginImmediate, updateValue] { sqlite3_finalize(statement) }
        sqlite3_close(db)
    }

    /// Inserts or replaces the value of `key`; `expiry` in seconds since 1970, nil for never.
    func set(_ value: Data, forKey key: String, expiry: Double? = nil) throws {
        try lock.withLock { _ in try runUpsert(value, forKey: key, expiry: expiry) }
    }

    /// Inserts or replaces every pair in one transaction — `BEGIN`, the prepared upsert per pair,
    /// `COMMIT` (one `fsync` of the WAL with `synchronous=FULL`) — as SQLite users write a batch
    /// (GRDB's `inTransaction`). A failure rolls the whole transaction back.
    func setAll(_ pairs: [(key: String, value: Data)], expiry: Double? = nil) throws {
        try lock.withLock { _ in
            try step(begin)
            do {
                for pair in pairs { try runUpsert(pair.value, forKey: pair.key, expiry: expiry) }
                try step(commit)
            } catch {
                sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
                throw error
            }
        }
    }

    /// Read-modify-write of every key in `keys` as one transaction, as SQLite users write an update:
    /// `BEGIN IMMEDIATE` (the write lock first, so no other writer lands between the read and the
    /// write), per key the prepared `SELECT value` and `UPDATE kv SET value = ?`, then `COMMIT`.
    /// `change` maps a key's stored bytes to the new ones. A missing key or a failure rolls back.
    func update(_ keys: some Sequence<String>, _ change: (String, Data) throws -> Data) throws {
        try lock.withLock { _ in
            try step(beginImmediate)
            do {
                for key in keys {
                    var stored: Data?
                    try run(select, key, onRow: { statement in
                        let count = Int(sqlite3_column_bytes(statement, 0))
                        stored = count == 0 ? Data() : Data(bytes: sqlite3_column_blob(statement, 0), count: count)
                    })
                    guard let stored else { throw Failure(description: "SQLite update: no row for \(key)") }
                    let value = try change(key, stored)
                    try run(updateValue, key, bind: { statement in
                        _ = value.withUnsafeBytes { sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), nil) }
                    })
                }
                try step(commit)
            } catch {
                sqlite3_exec(db, "ROLLBACK", nil, nil, nil)
                throw error
            }
        }
    }

    /// The prepared upsert of one pair; the caller holds `lock`.
    private func runUpsert(_ value: Data, forKey key: String, expiry: Double?) throws {
        try run(upsert, key, bind: { statement in
            _ = value.withUnsafeBytes { sqlite3_bind_blob(statement, 2, $0.baseAddress, Int32($0.count), nil) }
            if let expiry { sqlite3_bind_double(statement, 3, expiry) } else { sqlite3_bind_null(statement, 3) }
        })
    }

    /// The value of `key` (copied out of SQLite's page), nil when absent or expired at `now`.
    func value(forKey key: String, now: Double = 0) throws -> Data? {
        try lock.withLock { _ in
            var result: Data?
            try run(select, key, onRow: { statement in
                if sqlite3_column_type(statement, 1) != SQLITE_NULL, sqlite3_column_double(statement, 1) < now { return }
                let count = Int(sqlite3_column_bytes(statement, 0))
                result = count == 0 ? Data() : Data(bytes: sqlite3_column_blob(statement, 0), count: count)
            })
            return result
        }
    }

    /// Whether `key` is stored and not expired at `now`.
    func contains(_ key: String, now: Double = 0) throws -> Bool {
        try lock.withLock { _ in
            var found = false
            try run(exists, key, onRow: { statement in
                found = sqlite3_column_type(statement, 0) == SQLITE_NULL || sqlite3_column_double(statement, 0) >= now
            })
            return found
        }
    }

    func remove(forKey key: String) throws {
        try lock.withLock { _ in try run(delete, key) }
    }

    /// `DELETE FROM kv WHERE expiry < now`: what `removeExpiredObjects` is in SQLite.
    func removeExpired(now: Double) throws {
        try lock.withLock { _ in
            sqlite3_bind_double(deleteExpired, 1, now)
            try step(deleteExpired)
        }
    }

    /// Any statement, not prepared ahead (setup, bulk loads, `DELETE FROM kv`).
    func execute(_ sql: String) throws {
        try lock.withLock { _ in
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
        }
    }

    /// The keys that start with `prefix` (ASCII), as SQLite users list a namespace: a range scan
    /// `key >= prefix AND key < prefix-with-its-last-byte-plus-one` over the primary key's index.
    func keys(withASCIIPrefix prefix: String) throws -> [String] {
        var upper = Array(prefix.utf8)
        precondition(!upper.isEmpty && upper.allSatisfy { $0 < 0x7F }, "an ASCII prefix")
        upper[upper.count - 1] += 1
        return try lock.withLock { _ in
            var statement: OpaquePointer?
            guard sqlite3_prepare_v2(db, "SELECT key FROM kv WHERE key >= ?1 AND key < ?2", -1, &statement, nil) == SQLITE_OK else {
                throw failure("prepare")
            }
            defer { sqlite3_finalize(statement) }
            var keys: [String] = []
            var lower = prefix
            try lower.withUTF8 { low in
                try upper.withUnsafeBufferPointer { high in
                    sqlite3_bind_text(statement, 1, UnsafeRawPointer(low.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(low.count), nil)
                    sqlite3_bind_text(statement, 2, UnsafeRawPointer(high.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(high.count), nil)
                    try step(statement) { row in keys.append(String(cString: sqlite3_column_text(row, 0))) }
                }
            }
            return keys
        }
    }

    /// The keys and values that start with `prefix` (ASCII), in key order: the range scan of
    /// ``keys(withASCIIPrefix:)`` with the values, through a statement prepared once and reused.
    /// Each value is handed to `body` as it is read (copied out of SQLite's page).
    func pairs(withASCIIPrefix prefix: String, _ body: (String, Data) -> Void) throws {
        var upper = Array(prefix.utf8)
        precondition(!upper.isEmpty && upper.allSatisfy { $0 < 0x7F }, "an ASCII prefix")
        upper[upper.count - 1] += 1
        try lock.withLock { _ in
            var lower = prefix
            try lower.withUTF8 { low in
                try upper.withUnsafeBufferPointer { high in
                    sqlite3_bind_text(range, 1, UnsafeRawPointer(low.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(low.count), nil)
                    sqlite3_bind_text(range, 2, UnsafeRawPointer(high.baseAddress!).assumingMemoryBound(to: CChar.self), Int32(high.count), nil)
                    try step(range) { row in
                        let count = Int(sqlite3_column_bytes(row, 1))
                        let value = count == 0 ? Data() : Data(bytes: sqlite3_column_blob(row, 1), count: count)
                        body(String(cString: sqlite3_column_text(row, 0)), value)
                    }
                }
            }
        }
    }

    // MARK: - Statements

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK else {
            throw failure(sql)
        }
        return statement
    }

    /// Binds the key as ?1 (without a copy: the statement is reset before the string goes away),
    /// lets `bind` bind the rest, steps to the end and resets.
    private func run(_ statement: OpaquePointer?, _ key: String, bind: (OpaquePointer?) -> Void = { _ in },
                     onRow: (OpaquePointer?) -> Void = { _ in }) throws {
        var key = key
        try key.withUTF8 { utf8 in
            sqlite3_bind_text(statement, 1, UnsafeRawPointer(utf8.baseAddress!).assumingMemoryBound(to: CChar.self),
                              Int32(utf8.count), nil)
            bind(statement)
            try step(statement, onRow: onRow)
        }
    }

    private func step(_ statement: OpaquePointer?, onRow: (OpaquePointer?) -> Void = { _ in }) throws {
        defer {
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
        }
        while true {
            switch sqlite3_step(statement) {
            case SQLITE_ROW: onRow(statement)
            case SQLITE_DONE: return
            default: throw failure("step")
            }
        }
    }

    private func failure(_ what: String) -> Failure {
        Failure(description: "SQLite \(what): \(String(cString: sqlite3_errmsg(db)))")
    }
}
