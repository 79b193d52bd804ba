import CLevelDB
import Foundation

/// LevelDB through its C API, set up as its users run it: default options (plus create-if-missing),
/// `sync=false` (`true` when durable), default read options (`verify_checksums` off: LevelDB then
/// checks a block's checksum only when it reads it from disk into its cache; the engine rows keep a
/// `verify_checksums` row beside the default one), one `Put`/`Delete` per operation, raw bytes as values.
/// The `raw…` methods take keys and values as C buffers: what the engine rows call, with no Swift
/// allocation per operation.
// @unchecked: a leveldb_t is safe for concurrent use (its documentation); the options are never changed after init.
final class LevelDBStore: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    let path: String
    private let db: OpaquePointer
    private let options: OpaquePointer
    private let writeOptions: OpaquePointer
    private let readOptions: OpaquePointer
    /// `verify_checksums=true`: every read re-checks the checksum of the block it reads from.
    private let checkedReadOptions: OpaquePointer

    init(path: String, durable: Bool = false) throws {
        self.path = path
        options = leveldb_options_create()
        leveldb_options_set_create_if_missing(options, 1)
        writeOptions = leveldb_writeoptions_create()
        leveldb_writeoptions_set_sync(writeOptions, durable ? 1 : 0)
        readOptions = leveldb_readoptions_create()
        checkedReadOptions = leveldb_readoptions_create()
        leveldb_readoptions_set_verify_checksums(checkedReadOptions, 1)
        var error: UnsafeMutablePointer<CChar>?
        let opened = leveldb_open(options, path, &error)
        guard let opened, error == nil else {
            let failure = Self.failure("open \(path)", error)
            leveldb_options_destroy(options)
            leveldb_writeoptions_destroy(writeOptions)
            leveldb_readoptions_destroy(readOptions)
            leveldb_readoptions_destroy(checkedReadOptions)
            throw failure
        }
        db = opened
    }

    deinit {
        leveldb_close(db)
        leveldb_options_destroy(options)
        leveldb_writeoptions_destroy(writeOptions)
        leveldb_readoptions_destroy(readOptions)
        leveldb_readoptions_destroy(checkedReadOptions)
    }

    /// One `Put` of C buffers.
    @inline(__always)
    func rawSet(key: UnsafeRawPointer, count keyCount: Int, value: UnsafeRawPointer, count valueCount: Int) throws {
        var error: UnsafeMutablePointer<CChar>?
        leveldb_put(db, writeOptions, key.assumingMemoryBound(to: CChar.self), keyCount,
                    value.assumingMemoryBound(to: CChar.self), valueCount, &error)
        if error != nil { throw Self.failure("put", error) }
    }

    /// One `Get`: LevelDB's malloc'd copy of the value is the read's result (its first byte and
    /// length are consumed, then it is freed). Returns the length; throws when the key is absent.
    @inline(__always)
    func rawGet(key: UnsafeRawPointer, count keyCount: Int, verifyChecksums: Bool = false) throws -> Int {
        var error: UnsafeMutablePointer<CChar>?
        var count = 0
        let bytes = leveldb_get(db, verifyChecksums ? checkedReadOptions : readOptions,
                                key.assumingMemoryBound(to: CChar.self), keyCount, &count, &error)
        if error != nil { throw Self.failure("get", error) }
        guard let bytes else { throw Failure(description: "LevelDB get: no value for a stored key") }
        consume(count &+ Int(bytes[0]))
        leveldb_free(bytes)
        return count
    }

    /// One `Delete`.
    @inline(__always)
    func rawRemove(key: UnsafeRawPointer, count keyCount: Int) throws {
        var error: UnsafeMutablePointer<CChar>?
        leveldb_delete(db, writeOptions, key.assumingMemoryBound(to: CChar.self), keyCount, &error)
        if error != nil { throw Self.failure("delete", error) }
    }

    func set(_ value: Data, forKey key: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        Self.withKey(key) { keyBytes, keyCount in
            value.withUnsafeBytes { bytes in
                leveldb_put(db, writeOptions, keyBytes, keyCount,
                            bytes.baseAddress?.assumingMemoryBound(to: CChar.self), bytes.count, &error)
            }
        }
        if error != nil { throw Self.failure("put", error) }
    }

    /// The value of `key`: LevelDB hands out a malloc'd copy, which becomes the `Data` without another copy.
    func value(forKey key: String) throws -> Data? {
        var error: UnsafeMutablePointer<CChar>?
        var count = 0
        let bytes = Self.withKey(key) { leveldb_get(db, readOptions, $0, $1, &count, &error) }
        if error != nil { throw Self.failure("get", error) }
        guard let bytes else { return nil }
        return Data(bytesNoCopy: bytes, count: count, deallocator: .custom { pointer, _ in leveldb_free(pointer) })
    }

    func remove(forKey key: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        Self.withKey(key) { leveldb_delete(db, writeOptions, $0, $1, &error) }
        if error != nil { throw Self.failure("delete", error) }
    }

    private static func withKey<R>(_ key: String, _ body: (UnsafePointer<CChar>, Int) -> R) -> R {
        var key = key
        return key.withUTF8 { utf8 in
            body(UnsafeRawPointer(utf8.baseAddress!).assumingMemoryBound(to: CChar.self), utf8.count)
        }
    }

    private static func failure(_ what: String, _ error: UnsafeMutablePointer<CChar>?) -> Failure {
        defer { if let error { leveldb_free(error) } }
        return Failure(description: "LevelDB \(what): " + (error.map { String(cString: $0) } ?? "failed"))
    }
}
