import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The key directory file as the index's base: read at open, written anew (Docs/Format.md, "Key directory").

extension DiskStore {
    /// Reads the key directory as the index's base (``LoadedDirectory``); returns its position, or nil (and an empty
    /// index) if there is none, or it is damaged, another store's, or names a segment the store does
    /// not have (one restored from a backup, or one that names segments since merged away).
    func loadDirectory(segments: [SegmentFile]) -> DirectoryPosition? {
        withIndex { $0 = KeyDirectory(seed: folder.storeID) }
        totalSize = 0
        earliestExpiry = .infinity
        let fd: Int32
        do {
            fd = try folder.handle.open(StoreFolder.directoryName, O_RDONLY | O_NONBLOCK) // a FIFO in its place must not block
        } catch {
            if !FileIO.isErrno(error, .ENOENT) {
                recoveryIssues.append(.corrupted("the key directory could not be opened (\(error)); the segments were replayed whole"))
            }
            return nil
        }
        defer { FileIO.closeDescriptor(fd) }
        let salts = Dictionary(segments.map { ($0.id, $0.salt) }, uniquingKeysWith: { first, _ in first })
        let loaded: LoadedDirectory?
        do {
            loaded = try LoadedDirectory(fd: fd, path: folder.handle.filePath(StoreFolder.directoryName),
                                         limit: DirectoryFormat.lengthLimit(segmentBytes: segments.reduce(0) { $0 + $1.length }, segments: segments.count))
        } catch {
            // Unreadable says nothing of its content (a device locked under data protection, say): kept.
            recoveryIssues.append(.corrupted("the key directory could not be read (\(error)); the segments were replayed whole"))
            return nil
        }
        // A segment it names may be gone if the floor supersedes it: a shared writer's compaction step
        // deletes the oldest segments once no entry is in them, and every entry the directory has there
        // moved by a record after its position (``DiskStore/compactionStep()``).
        guard let loaded, loaded.header.store == folder.storeID,
              loaded.header.segments.allSatisfy({ salts[$0.id] == $0.salt || (salts[$0.id] == nil && $0.id < floor) }),
              salts[loaded.header.position.segment] == loaded.header.position.salt else {
            if !DirectoryFormat.isFormerLayout(fd) { // an older layout is no damage: replaced once
                recoveryIssues.append(.corrupted("the key directory was damaged or stale; the segments were replayed whole"))
            }
            var info = stat()
            if fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG { discardStaleDirectory() } // a folder or FIFO is left alone
            return nil
        }
        withIndex { $0 = KeyDirectory(seed: folder.storeID, base: loaded) }
        totalSize = loaded.header.totalSize
        earliestExpiry = loaded.header.earliestExpiry
        values.raise(above: loaded.header.maxFileID)
        return loaded.header.position
    }

    /// Removes the key directory an open found stale or damaged (a writer only). Left in place, it
    /// could match again later: a power cut takes a segment's unsynced tail past the directory's
    /// position (the directory itself is durable), and once later writes make the segment that long
    /// again, the next open would take the directory, with the entries the power cut took and a
    /// replay that starts mid-record. The removal is flushed for the same reason.
    func discardStaleDirectory() {
        guard writes, (try? folder.handle.remove(StoreFolder.directoryName)) != nil else { return }
        try? folder.handle.sync()
    }

    /// Writes the key directory as of now, so that the next open reads it instead of replaying every
    /// record, and takes it as the index's new base (the overlay of changes is folded in). Durable
    /// (file and folder flushed): compaction removes the segments an older directory names.
    /// - Parameter thenLoad: Whether the store goes on with the new file as its base (not when it is closing).
    func writeDirectory(thenLoad: Bool = true) throws {
        try flushAccesses()
        guard let active else { return }
        let start = max(0, active.length - DirectoryFormat.tailWindow)
        let tail = try active.read(at: start, length: active.length - start)
        guard tail.count == active.length - start else { throw StorageError.corrupted("the active segment is shorter than the store wrote it") }
        let tailHash = tail.withUnsafeBytes { DirectoryFormat.tailHash($0, at: $0.count) }
        let position = DirectoryPosition(segment: active.id, salt: active.salt, offset: active.length, tailHash: tailHash)
        let salts = segments.mapValues(\.salt)
        let (bytes, count) = withIndex { index in
            let order = index.writingOrder()
            return (DirectoryFormat.encode(count: order.count, position: position, store: folder.storeID, segmentSalts: salts,
                                           forEach: { index.forEach(order, writing: $0) }), order.count)
        }
        do {
            try folder.handle.replaceFile(StoreFolder.directoryName, UnsafeRawBufferPointer(bytes), durable: true)
        } catch {
            bytes.deallocate()
            throw error
        }
        changesSinceDirectory = 0
        accessesSinceDirectory = 0
        publishStructure()
        // The bytes just written as the base (not read back: the file may have changed since): the
        // index's heap part goes.
        guard thenLoad else { return bytes.deallocate() }
        guard let loaded = LoadedDirectory(adopting: bytes), loaded.header.count == count else { return }
        withIndex { index in
            let order = index.order // the same keys: the order goes on, not sorted again
            index = KeyDirectory(seed: folder.storeID, base: loaded)
            index.order = order
        }
    }
}
