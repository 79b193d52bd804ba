import CSQLite
import Foundation

/// SQLite for the engine rows, reached with the least wrapper: the same table and settings as
/// ``SQLiteStore`` (WAL, `synchronous=NORMAL`, statements prepared once, one implicit transaction
/// per statement) but keys and values bound straight from C buffers (`SQLITE_STATIC`: no copy) and
/// no lock (one thread at a time uses it, as the C driver's). `busyTimeout` > 0: `sqlite3_busy_timeout`,
/// set before anything else, for a database other processes write too (0: none, one connection).
final class SQLiteRaw {
    private var db: OpaquePointer?
    private var upsert: OpaquePointer?
    private var select: OpaquePointer?
    private var delete: OpaquePointer?
    /// Where `get` copies a value out.
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    init(folder: URL, busyTimeout: Int32 = 0) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = folder.appendingPathComponent("sqlite.db").path
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK else {
            defer { close() }
            throw failure("open \(path)")
        }
        if busyTimeout > 0 { sqlite3_busy_timeout(db, busyTimeout) }
        do {
            for sql in ["PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL",
                        "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB NOT NULL, expiry REAL)"] {
                guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
            }
            upsert = try prepare("INSERT INTO kv(key, value, expiry) VALUES(?1, ?2, NULL) "
                + "ON CONFLICT(key) DO UPDATE SET value = excluded.value, expiry = NULL")
            select = try prepare("SELECT value FROM kv WHERE key = ?1")
            delete = try prepare("DELETE FROM kv WHERE key = ?1")
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        scratch.deallocate()
    }

    private func close() {
        for statement in [upsert, select, delete] { sqlite3_finalize(statement) }
        (upsert, select, delete) = (nil, nil, nil)
        sqlite3_close(db)
        db = nil
    }

    @inline(__always)
    func set(key: UnsafeRawPointer, count keyCount: Int, value: UnsafeRawPointer, count valueCount: Int) throws {
        sqlite3_bind_text(upsert, 1, key.assumingMemoryBound(to: CChar.self), Int32(keyCount), nil)
        sqlite3_bind_blob(upsert, 2, value, Int32(valueCount), nil)
        try finish(upsert, sqlite3_step(upsert))
    }

    /// The value's length, copied into the scratch buffer; throws when the key is absent.
    @inline(__always)
    func get(key: UnsafeRawPointer, count keyCount: Int) throws -> Int {
        sqlite3_bind_text(select, 1, key.assumingMemoryBound(to: CChar.self), Int32(keyCount), nil)
        let code = sqlite3_step(select)
        var length = -1
        if code == SQLITE_ROW {
            length = Int(sqlite3_column_bytes(select, 0))
            if let bytes = sqlite3_column_blob(select, 0) {
                scratch.baseAddress!.copyMemory(from: bytes, byteCount: Swift.min(length, scratch.count))
            }
        }
        try finish(select, code)
        guard length >= 0 else { throw BenchError("SQLite: no value for a stored key") }
        consume(length &+ Int(scratch[0]))
        return length
    }

    @inline(__always)
    func remove(key: UnsafeRawPointer, count keyCount: Int) throws {
        sqlite3_bind_text(delete, 1, key.assumingMemoryBound(to: CChar.self), Int32(keyCount), nil)
        try finish(delete, sqlite3_step(delete))
    }

    @inline(__always)
    private func finish(_ statement: OpaquePointer?, _ code: Int32) throws {
        sqlite3_reset(statement)
        sqlite3_clear_bindings(statement)
        guard code == SQLITE_DONE || code == SQLITE_ROW else { throw failure("step") }
    }

    private func prepare(_ sql: String) throws -> OpaquePointer? {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw failure(sql) }
        return statement
    }

    private func failure(_ what: String) -> BenchError {
        BenchError("SQLite \(what): " + (db.map { String(cString: sqlite3_errmsg($0)) } ?? "failed"))
    }
}
