import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Values kept in files of their own: large ones, and every one when ``DiskConfig/storesValuesAsFiles``.
///
/// A file holds exactly the transformer's bytes (a PNG stays a PNG) and is named by a number
/// (`<16 hex digits>.value`), never by its key: names cannot collide for canonically equivalent
/// keys, nor say anything about the keys. Its set record carries its size and XXH64, which every
/// read verifies (a same-size edit of the file is caught too).
///
/// A file is written before the record that names it, under a number no record has used: a crash in
/// between leaves an orphan that the next open removes, never a record without its file.
final class ValueFiles: Sendable {
    /// Values this large or larger go to files of their own (packed in segments below it).
    ///
    /// Chosen by measurement (Docs/Benchmarks.md): up to here an append to the open segment beats
    /// creating a file, which on ext4 costs 250–550 µs once deletions have freed inodes.
    static let threshold = 256 * 1024

    let directory: String
    private let nextID = Locked<UInt64>(1)

    init(directory: String) {
        self.directory = directory
    }

    func path(of id: UInt64) -> String {
        directory + "/" + Self.name(of: id)
    }

    static func name(of id: UInt64) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + ".value"
    }

    /// The number in a value file's name, or nil if `name` is no value file's.
    static func id(ofName name: String) -> UInt64? {
        let utf8 = name.utf8
        guard utf8.count == 22, name.hasSuffix(".value") else { return nil }
        let digits = name.utf8.prefix(16)
        guard digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return UInt64(Substring(digits), radix: 16)
    }

    /// Numbers handed out from now on are above `id`.
    func raise(above id: UInt64) {
        nextID.withLock { $0 = max($0, id &+ 1) }
    }

    func allocate() -> UInt64 {
        nextID.withLock { id in
            defer { id += 1 }
            return id
        }
    }

    /// Writes `data` to a new value file (flushed with its folder if `durable`); returns its number and hash.
    func write(_ data: Data, durable: Bool) throws -> (id: UInt64, hash: UInt64) {
        let id = allocate()
        let hash = XXH64.hash(data)
        let path = path(of: id)
        do {
            try FileIO.writeFile(path, data, durable: durable)
        } catch where FileIO.isErrno(error, .ENOENT) {
            // The folder was removed underneath: make it again (the store notices and starts over).
            try FileIO.createDirectory(directory)
            try FileIO.writeFile(path, data, durable: durable)
        }
        if durable {
            do {
                try FileIO.syncDirectory(directory)
            } catch {
                unlink(path)
                throw error
            }
        }
        return (id, hash)
    }

    /// The bytes of value file `id`, verified against its record.
    /// - Throws: ``StorageError/corrupted(_:)`` for a missing, short, long or altered file.
    func read(_ id: UInt64, size: Int, hash: UInt64) throws -> Data {
        let path = path(of: id)
        let data: Data
        do {
            data = try FileIO.readFile(path, expectedSize: size)
        } catch where FileIO.isErrno(error, .ENOENT) {
            throw StorageError.corrupted("the value file \(path) is missing")
        }
        guard XXH64.hash(data) == hash else {
            throw StorageError.corrupted("the value file \(path) does not match its checksum")
        }
        return data
    }

    /// Removes value file `id`; false if it could not be (it is then an orphan for the next open).
    @discardableResult
    func remove(_ id: UInt64) -> Bool {
        (try? FileIO.remove(path(of: id))) != nil
    }
}
