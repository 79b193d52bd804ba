import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One open segment file: read with `pread` from any thread, appended to (the active one) on the
/// store's queue. Records are only ever appended; a sealed segment never changes again.
package final class SegmentFile: @unchecked Sendable {
    // @unchecked Sendable: `length`, `deadBytes` and `path` change on the store's queue only (or on the
    // compaction thread before it hands the file over); `fd`, `id`, `salt` and `flags` are immutable,
    // and `pread` on one descriptor is safe from several threads.
    // `@exclusivity(unchecked)`: see `DiskStore`.
    package let id: UInt32
    let salt: UInt64
    package let flags: UInt32
    /// The identity of the store that wrote it (nil: a version-2 segment, which carries none).
    package let store: UInt64?
    /// Every segment numbered below this one is superseded by it (0: none).
    package let floor: UInt32
    /// Where its records start (the header's length).
    let recordsStart: Int
    /// The folder it is in: renames go through it, never through a path.
    package let folder: FolderHandle
    /// Read by every append (for its errors): unchecked, as ``length``.
    @exclusivity(unchecked) package private(set) var path: String
    package let fd: Int32
    /// Where the next record goes (the valid length of the file).
    @exclusivity(unchecked) var length: Int
    /// Bytes of records that no longer matter (overwritten, removed, access records).
    @exclusivity(unchecked) var deadBytes = 0
    /// The file mapped for reads (``map(length:)``); nil until then, or where it cannot be mapped.
    private(set) var mapping: SegmentMapping?
    /// The file mapped for appends while it is the active segment of a writer that keeps the folder to
    /// itself (``mapForAppends(length:)``); nil otherwise: appends are then `pwrite`s.
    private var window: SegmentWriteWindow?

    private init(header: SegmentFormat.Header, folder: FolderHandle, name: String, fd: Int32, length: Int) {
        (id, salt, flags, store, floor, recordsStart) = (header.id, header.salt, header.flags, header.store, header.floor, header.length)
        (self.folder, self.path, self.fd, self.length) = (folder, folder.filePath(name), fd, length)
    }

    /// The bytes of its records, live and dead.
    var recordBytes: Int { length - recordsStart }

    deinit {
        FileIO.close(fd)
    }

    /// What a segment kept for processes that follow the store is renamed to add (``RetainedSegments``):
    /// no open takes it for a segment, so it is never replayed, whatever happens to the segments after it.
    package static let keptSuffix = ".kept"

    package static func name(of id: UInt32) -> String {
        let hex = String(id, radix: 16)
        return String(repeating: "0", count: max(0, 8 - hex.count)) + hex + ".segment"
    }

    /// The number in a segment's file name, or nil if `name` is no segment's.
    package static func id(ofName name: String) -> UInt32? {
        let utf8 = name.utf8
        guard utf8.count == 16, name.hasSuffix(".segment") else { return nil }
        let digits = utf8.prefix(8)
        guard digits.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else { return nil }
        return UInt32(Substring(digits), radix: 16)
    }

    /// The suffix of a compaction output until the compaction is committed (``publish()``): a crash,
    /// or a store closed meanwhile, leaves a file that no replay reads and the next open removes.
    static let unpublishedSuffix = ".compacting"

    /// Creates segment `id` of store `store` in `folder` (which must not have it yet) and writes its
    /// header; with `unpublished`, under a name replay ignores until ``publish()``.
    package static func create(id: UInt32, in folder: FolderHandle, store: UInt64, floor: UInt32 = 0, flags: UInt32 = 0,
                       durable: Bool, unpublished: Bool = false) throws -> SegmentFile {
        let name = name(of: id) + (unpublished ? unpublishedSuffix : "")
        let header = SegmentFormat.Header(id: id, salt: UInt64.random(in: 1...UInt64.max), flags: flags, store: store, floor: floor)
        let fd = try folder.open(name, O_RDWR | O_CREAT | O_EXCL)
        let file = SegmentFile(header: header, folder: folder, name: name, fd: fd, length: 0)
        do {
            try file.append(SegmentFormat.header(header))
            if durable { try file.sync() }
            // The new name must be on stable storage before a durable record in it counts as written.
            if durable { try folder.sync() }
        } catch {
            try? folder.remove(name)
            throw error
        }
        return file
    }

    /// Opens the segment named for `id` in `folder` and reads it (whole, or only its header when
    /// `wholeFile` is false: then the bytes returned are the header alone); nil if it has no valid
    /// segment header. Its ``id`` is the one its header says, which the caller compares with `id`.
    /// - Throws: `EISDIR` or `ENXIO` for a folder, FIFO or device in the segment's place.
    /// `name`: the file's, when not the segment's own (a kept one's, ``keptSuffix``).
    package static func open(_ id: UInt32, in folder: FolderHandle, writable: Bool, wholeFile: Bool = true,
                             name: String? = nil) throws -> (file: SegmentFile, bytes: [UInt8])? {
        let name = name ?? Self.name(of: id)
        let path = folder.filePath(name)
        // Non-blocking: a FIFO planted in a segment's place must not block the open (for reading it
        // would wait for a writer); anything but a regular file is then no segment.
        let fd = try folder.open(name, (writable ? O_RDWR : O_RDONLY) | O_NONBLOCK)
        do {
            let info = try FileIO.status(fd, path)
            guard (info.st_mode & S_IFMT) == S_IFREG else {
                // A folder, FIFO or device in a segment's place: not the store's file, left alone.
                throw FileIO.error("open", path, code: (info.st_mode & S_IFMT) == S_IFDIR ? EISDIR : ENXIO)
            }
            let bytes: [UInt8]?
            if wholeFile {
                bytes = try FileIO.readAll(fd, path: path)
            } else {
                bytes = try FileIO.read(fd, at: 0, count: SegmentFormat.headerLength, path: path)
            }
            let header = bytes.flatMap { bytes in bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) } }
            guard let bytes, let header else {
                FileIO.close(fd)
                return nil
            }
            let length = wholeFile ? bytes.count : try FileNumber.size(info, path: path)
            return (SegmentFile(header: header, folder: folder, name: name, fd: fd, length: length), bytes)
        } catch {
            FileIO.close(fd)
            throw error
        }
    }

    /// Appends `bytes`: copied into the mapping for appends where there is one, else in one `pwrite`;
    /// on failure cuts a partly written record off again.
    package func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try append($0) }
    }

    package func append(_ bytes: UnsafeRawBufferPointer) throws {
        if let window {
            if window.write(bytes, at: length) {
                length += bytes.count
                return
            }
            // `pwrite`s from now on (a window that failed once would fail again), and no room left
            // past the records without one: the segment would be sealed with it.
            endAppends()
        }
        do {
            try FileIO.writeAll(fd, bytes, at: length, path: path)
        } catch {
            _ = FileIO.truncate(fd, to: length)
            throw error
        }
        length += bytes.count
    }

    /// Maps the file for appends (``SegmentWriteWindow``), `length` bytes: as many as it can ever hold.
    func mapForAppends(length mappedLength: Int) {
        if window == nil { window = SegmentWriteWindow(fd: fd, fileLength: length, length: mappedLength) }
    }

    /// Ends appends through the mapping and cuts off the room it reserved, so that the file ends where
    /// its records do: when the segment is sealed, and when the store closes. Returns the mapping, which
    /// goes (is unmapped, on the release thread) with its last reference: a caller may keep it a while.
    @discardableResult
    func endAppends() -> SegmentWriteWindow? {
        guard let window else { return nil }
        self.window = nil
        // Whatever the window reserved, also by a reservation that failed partway.
        _ = FileIO.truncate(fd, to: length)
        return window
    }

    /// Gives an unpublished compaction output its segment name (the caller then flushes the folder).
    package func publish() throws {
        guard path.hasSuffix(Self.unpublishedSuffix) else { return }
        // A file of that name that is not the store's (planted, copied in) is never replaced.
        if folder.status(of: Self.name(of: id)) != nil {
            throw FileIO.error("rename", folder.filePath(Self.name(of: id)), code: EEXIST)
        }
        try folder.rename(Self.name(of: id) + Self.unpublishedSuffix, Self.name(of: id))
        path = folder.filePath(Self.name(of: id))
    }

    /// Cuts the file to `newLength` (a torn or damaged tail found at open).
    func truncate(to newLength: Int) throws {
        if FileIO.truncate(fd, to: newLength) != 0 { throw FileIO.error("ftruncate", path) }
        length = newLength
    }

    package func sync() throws {
        try FileIO.synchronize(fd, path)
    }

    /// The `length` bytes at `offset` (fewer at the end of the file).
    package func read(at offset: Int, length: Int) throws -> [UInt8] {
        try FileIO.read(fd, at: offset, count: length, path: path)
    }

    /// The record of `length` bytes at `offset`, verified: the record and its raw bytes.
    /// - Throws: ``StorageError/corrupted(_:)`` unless a record that verifies is exactly there.
    package func record(at offset: Int, length: Int) throws -> (SegmentRecord, [UInt8]) {
        let bytes = try read(at: offset, length: length)
        let parsed = bytes.withUnsafeBytes { SegmentFormat.record(in: $0, at: 0, salt: salt) }
        guard let (record, parsedLength) = parsed, parsedLength == length else {
            throw StorageError.corrupted("the record at byte \(offset) of \(path) is damaged")
        }
        return (record, bytes)
    }

    /// Maps the file's first `length` bytes for reads, unless it is mapped already (on the queue, as
    /// the segment joins the store's table: ``SegmentLog/segments``).
    func map(length: Int) {
        if mapping == nil { mapping = SegmentMapping(fd: fd, length: length) }
    }

    /// Reads the set record of `bytes.count` bytes at `offset` into `bytes` (the store's reused read
    /// buffer) and verifies it, without decoding its key: the key's bytes (within `bytes`) and what it says.
    /// - Throws: ``StorageError/corrupted(_:)`` unless a set record that verifies is exactly there.
    func setRecord(at offset: Int, into bytes: UnsafeMutableRawBufferPointer) throws -> (key: UnsafeRawBufferPointer, info: SetInfo) {
        if let mapping, mapping.copy(at: offset, into: bytes),
           let (key, info) = SegmentFormat.setRecord(UnsafeRawBufferPointer(bytes), salt: salt) {
            return (UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[key]), info)
        }
        // Not mapped, or not verified from the mapping: read with `pread` before calling it damaged,
        // so that a file system whose mappings lag its writes (a network one, say) never makes a good
        // record `corrupted`, which would drop its entry.
        let read = try FileIO.read(fd, at: offset, into: bytes, path: path)
        guard read == bytes.count, let (key, info) = SegmentFormat.setRecord(UnsafeRawBufferPointer(bytes), salt: salt) else {
            throw StorageError.corrupted("the record at byte \(offset) of \(path) is damaged")
        }
        return (UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[key]), info)
    }

    /// Whether the file was unlinked underneath (its folder removed, maybe made anew). The same `fstat`
    /// tells the mapping for appends how long the file is (``SegmentWriteWindow/noteFileLength(_:)``).
    var isDetached: Bool {
        guard let info = FileIO.fileStatus(fd) else { return false }
        if let window, let size = FileNumber.int(info.st_size) { window.noteFileLength(size) }
        return info.st_nlink == 0
    }

    /// Removes the file from its folder (through the folder, never by path).
    package func remove() {
        mapping?.isOfRemovedFile = true
        try? folder.remove((path as NSString).lastPathComponent)
    }

    /// Renames the file to its kept name (``keptSuffix``), out of the store's segments; false if it
    /// could not be.
    func keep() -> Bool {
        mapping?.isOfRemovedFile = true
        let name = (path as NSString).lastPathComponent
        return (try? folder.rename(name, name + Self.keptSuffix)) != nil
    }
}
