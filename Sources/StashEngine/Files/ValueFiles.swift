package import Foundation
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
package final class ValueFiles: Sendable {
    /// Values this large or larger go to files of their own (packed in segments below it).
    ///
    /// Chosen by measurement (Docs/Benchmarks.md): up to here an append to the open segment beats
    /// creating a file, which on ext4 costs 250–550 µs once deletions have freed inodes.
    static let threshold = 256 * 1024

    /// The store's folder; replaced when the store opens its folder anew (``DiskStore/reopen()``).
    private let folder: Locked<FolderHandle>
    private let nextID = Locked<UInt64>(1)
    /// Whether numbers are drawn at random rather than counted up: writers in several processes
    /// (``DiskConfig/allowsWritersInOtherProcesses``). There a file no record names any more is
    /// deleted by whichever process comes to it, at times the others do not know (the files a
    /// `removeAll` emptied go after its call returned, a replaced file once its write is durable), and
    /// a process that opened since, counting up from the files it found, would reuse a freed number
    /// still due to be deleted: its new file would go with the old one.
    private let randomIDs: Bool

    package init(folder: FolderHandle, randomIDs: Bool = false) {
        self.folder = Locked(folder)
        self.randomIDs = randomIDs
    }

    /// The folder files are written to now.
    package var handle: FolderHandle {
        get { folder.withLock { $0 } }
        set { folder.withLock { $0 = newValue } }
    }

    package func path(of id: UInt64) -> String {
        handle.filePath(Self.name(of: id))
    }

    package static func name(of id: UInt64) -> String {
        hex(id, digits: 16) + ".value"
    }

    /// The number in a value file's name, or nil if `name` is no value file's.
    package static func id(ofName name: String) -> UInt64? {
        let utf8 = name.utf8
        guard utf8.count == 22, name.hasSuffix(".value") else { return nil }
        let digits = name.utf8.prefix(16)
        guard digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return UInt64(Substring(digits), radix: 16)
    }

    /// Numbers handed out from now on are above `id`.
    package func raise(above id: UInt64) {
        nextID.withLock { $0 = max($0, id &+ 1) }
    }

    package func allocate() -> UInt64 {
        // Below 2^62: a store opened later without the setting counts up from the highest without overflowing.
        if randomIDs { return UInt64.random(in: 1...(1 << 62)) }
        return nextID.withLock { id in
            defer { id += 1 }
            return id
        }
    }

    /// Writes `data` to a new value file (flushed with its folder if `durable`); returns its number and hash.
    ///
    /// Never overwrites or unlinks a file: a name that is taken (a file the store did not write) is
    /// passed over for the next number. Written through the folder, so after the folder was removed
    /// this fails rather than writing into whatever stands at its path now.
    package func write(_ data: Data, durable: Bool) throws -> (id: UInt64, hash: UInt64) {
        let hash = XXH64.hash(data)
        let folder = handle
        while true {
            let id = allocate()
            let name = Self.name(of: id)
            let fd: Int32
            do {
                fd = try folder.open(name, O_WRONLY | O_CREAT | O_EXCL)
            } catch where FileIO.isErrno(error, .EEXIST) {
                continue
            }
            do {
                var written: (any Error)?
                do {
                    try data.withUnsafeBytes { try FileIO.writeAll(fd, $0, path: folder.filePath(name)) }
                    if durable { try FileIO.synchronize(fd, folder.filePath(name)) }
                } catch {
                    written = error
                }
                if FileIO.close(fd) != 0, written == nil { written = FileIO.error("close", folder.filePath(name)) }
                if let written { throw written }
                if durable { try folder.sync() }
            } catch {
                try? folder.remove(name)
                throw error
            }
            return (id, hash)
        }
    }

    /// The bytes of value file `id`, verified against its record.
    /// - Throws: ``StorageError/corrupted(_:)`` for a missing, short, long or altered file.
    package func read(_ id: UInt64, size: Int, hash: UInt64) throws -> Data {
        let folder = handle
        let path = folder.filePath(Self.name(of: id))
        let data: Data
        do {
            data = try FileIO.readFile(Self.name(of: id), in: folder, expectedSize: size)
        } catch where FileIO.isErrno(error, .ENOENT) {
            throw StorageError.corrupted("the value file \(path) is missing")
        }
        guard XXH64.hash(data) == hash else {
            throw StorageError.corrupted("the value file \(path) does not match its checksum")
        }
        return data
    }

    /// Value file `id` of the folder the store has now.
    func ref(_ id: UInt64) -> ValueFileRef {
        ValueFileRef(folder: handle, id: id, keptFor: nil)
    }

    /// Removes value file `id`; false if it could not be (it is then an orphan for the next open).
    @discardableResult
    package func remove(_ id: UInt64) -> Bool {
        (try? handle.remove(Self.name(of: id))) != nil
    }
}

/// A value file in the folder it was written to: removed through that folder, so a store that has
/// opened its path anew meanwhile never removes a file of the same number in the new folder.
package struct ValueFileRef: Sendable {
    package let folder: FolderHandle
    package let id: UInt64
    /// The position of the record that named it, and who keeps it while a process following the store
    /// may still read that record (``SegmentLog/valueFile(of:)``); nil: removed at once.
    var keptFor: (position: (segment: UInt32, offset: Int), retained: RetainedSegments, shared: SharedState)?

    package var exists: Bool {
        guard let fd = try? folder.open(ValueFiles.name(of: id), O_RDONLY | O_NONBLOCK) else { return false }
        FileIO.close(fd)
        return true
    }

    package func remove() {
        if let keptFor {
            keptFor.retained.retireValueFile(id, namedAt: keptFor.position, folder: folder, shared: keptFor.shared)
        } else {
            try? folder.remove(ValueFiles.name(of: id))
        }
    }
}
