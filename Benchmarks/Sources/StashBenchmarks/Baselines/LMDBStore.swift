import CLMDB
import Foundation

/// LMDB set up as the issue asks: `MDB_WRITEMAP | MDB_NOSYNC` (no fsync: like Stash's default
/// writes), one write transaction per operation, raw bytes as values (passed to `mdb_put` in
/// place, not copied first); a read is a read-only transaction around one `mdb_get`, copied out
/// into a `Data` (or, for the `raw…` methods the engine rows call, into a reused buffer).
// @unchecked: an MDB_env is safe for concurrent use; LMDB serializes write transactions itself.
final class LMDBStore: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let path: String
    private let env: OpaquePointer
    private let dbi: MDB_dbi
    /// Where `rawGet` copies a value out (a caller of Stash gets a copy too).
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)

    /// Opens (creating if needed) the environment in the folder `path`. The map is 4 GiB of address
    /// space: the file grows (sparsely) as pages are used, so it does not cost disk space.
    init(path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var env: OpaquePointer?
        try Self.check(mdb_env_create(&env), "env_create")
        guard let env else { throw Failure(description: "LMDB env_create returned no environment") }
        do {
            try Self.check(mdb_env_set_mapsize(env, 4 << 30), "set_mapsize")
            try Self.check(mdb_env_open(env, path, UInt32(MDB_WRITEMAP | MDB_NOSYNC), 0o644), "env_open \(path)")
            var transaction: OpaquePointer?
            try Self.check(mdb_txn_begin(env, nil, 0, &transaction), "txn_begin")
            var dbi = MDB_dbi()
            try Self.check(mdb_dbi_open(transaction, nil, 0, &dbi), "dbi_open")
            try Self.check(mdb_txn_commit(transaction), "txn_commit")
            self.dbi = dbi
        } catch {
            mdb_env_close(env)
            throw error
        }
        self.env = env
    }

    deinit {
        mdb_env_close(env)
        scratch.deallocate()
    }

    func set(_ value: Data, forKey key: String) throws {
        // mdb_put only reads the value (no MDB_RESERVE): the bytes go in place, without a copy.
        try write(key) { transaction, keyValue in
            value.withUnsafeBytes { bytes in
                var data = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
                return mdb_put(transaction, dbi, &keyValue, &data, 0)
            }
        }
    }

    /// One write transaction around one `mdb_put` of C buffers.
    @inline(__always)
    func rawSet(key: UnsafeRawPointer, count keyCount: Int, value: UnsafeRawPointer, count valueCount: Int) throws {
        var keyValue = MDB_val(mv_size: keyCount, mv_data: UnsafeMutableRawPointer(mutating: key))
        var data = MDB_val(mv_size: valueCount, mv_data: UnsafeMutableRawPointer(mutating: value))
        try rawWrite { mdb_put($0, dbi, &keyValue, &data, 0) }
    }

    /// One write transaction around one `mdb_del`; a key that is not there is no error.
    @inline(__always)
    func rawRemove(key: UnsafeRawPointer, count keyCount: Int) throws {
        var keyValue = MDB_val(mv_size: keyCount, mv_data: UnsafeMutableRawPointer(mutating: key))
        try rawWrite {
            let code = mdb_del($0, dbi, &keyValue, nil)
            return code == MDB_NOTFOUND ? 0 : code
        }
    }

    /// A read-only transaction around one `mdb_get`, the value copied into the scratch buffer.
    /// Returns its length; throws when the key is absent.
    @inline(__always)
    func rawGet(key: UnsafeRawPointer, count keyCount: Int) throws -> Int {
        var transaction: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &transaction), "txn_begin")
        defer { mdb_txn_abort(transaction) }
        var keyValue = MDB_val(mv_size: keyCount, mv_data: UnsafeMutableRawPointer(mutating: key))
        var data = MDB_val()
        try Self.check(mdb_get(transaction, dbi, &keyValue, &data), "get")
        scratch.baseAddress!.copyMemory(from: data.mv_data, byteCount: Swift.min(data.mv_size, scratch.count))
        consume(data.mv_size &+ Int(scratch[0]))
        return data.mv_size
    }

    @inline(__always)
    private func rawWrite(_ body: (OpaquePointer?) -> Int32) throws {
        var transaction: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &transaction), "txn_begin")
        let code = body(transaction)
        guard code == 0 else {
            mdb_txn_abort(transaction)
            return try Self.check(code, "write")
        }
        try Self.check(mdb_txn_commit(transaction), "txn_commit")
    }

    func value(forKey key: String) throws -> Data? {
        var transaction: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &transaction), "txn_begin")
        defer { mdb_txn_abort(transaction) }
        var keyString = key
        var data = MDB_val()
        let code = keyString.withUTF8 { utf8 in
            var keyValue = MDB_val(mv_size: utf8.count, mv_data: UnsafeMutableRawPointer(mutating: utf8.baseAddress))
            return mdb_get(transaction, dbi, &keyValue, &data)
        }
        if code == MDB_NOTFOUND { return nil }
        try Self.check(code, "get")
        return Data(bytes: data.mv_data, count: data.mv_size)
    }

    /// Removes `key`; a key that is not there is no error (as in LevelDB and Stash).
    func remove(forKey key: String) throws {
        try write(key) { transaction, keyValue in
            let code = mdb_del(transaction, dbi, &keyValue, nil)
            return code == MDB_NOTFOUND ? 0 : code
        }
    }

    /// One write transaction around `body`, committed (or aborted when `body` fails).
    private func write(_ key: String, _ body: (OpaquePointer?, inout MDB_val) -> Int32) throws {
        var transaction: OpaquePointer?
        try Self.check(mdb_txn_begin(env, nil, 0, &transaction), "txn_begin")
        var keyString = key
        let code = keyString.withUTF8 { utf8 in
            var keyValue = MDB_val(mv_size: utf8.count, mv_data: UnsafeMutableRawPointer(mutating: utf8.baseAddress))
            return body(transaction, &keyValue)
        }
        guard code == 0 else {
            mdb_txn_abort(transaction)
            return try Self.check(code, "write")
        }
        try Self.check(mdb_txn_commit(transaction), "txn_commit")
    }

    private static func check(_ code: Int32, _ what: String) throws {
        guard code != 0 else { return }
        throw Failure(description: "LMDB \(what): \(String(cString: mdb_strerror(code)))")
    }
}
