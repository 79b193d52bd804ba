import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The key directory file read at open as the index's base (Docs/Format.md, "Key directory").

extension StoreOpening {
    /// Reads the key directory as the index's base (``LoadedDirectory``); returns its position, or nil (and an empty
    /// index) if there is none, or it is damaged, another store's, or names a segment the store does
    /// not have (one restored from a backup, or one that names segments since merged away).
    func loadDirectory(segments: [SegmentFile]) -> DirectoryPosition? {
        store.withIndex { $0 = KeyDirectory(seed: store.log.folder.storeID) }
        store.totalSize = 0
        store.earliestExpiry = .infinity
        let fd: Int32
        do {
            fd = try store.log.folder.handle.open(StoreFolder.directoryName, O_RDONLY | O_NONBLOCK) // a FIFO in its place must not block
        } catch {
            if !FileIO.isErrno(error, .ENOENT) {
                store.recoveryIssues.append(.corrupted("the key directory could not be opened (\(error)); the segments were replayed whole"))
            }
            return nil
        }
        defer { FileIO.closeDescriptor(fd) }
        let salts = Dictionary(segments.map { ($0.id, $0.salt) }, uniquingKeysWith: { first, _ in first })
        let loaded: LoadedDirectory?
        do {
            loaded = try LoadedDirectory(fd: fd, path: store.log.folder.handle.filePath(StoreFolder.directoryName),
                                         limit: DirectoryFormat.lengthLimit(segmentBytes: segments.reduce(0) { $0 + $1.length }, segments: segments.count))
        } catch {
            // Unreadable says nothing of its content (a device locked under data protection, say): kept.
            store.recoveryIssues.append(.corrupted("the key directory could not be read (\(error)); the segments were replayed whole"))
            return nil
        }
        // A segment it names may be gone if the floor supersedes it: a shared writer's compaction step
        // deletes the oldest segments once no entry is in them, and every entry the directory has there
        // moved by a record after its position (``Compaction/step()``).
        guard let loaded, loaded.header.store == store.log.folder.storeID,
              loaded.header.segments.allSatisfy({ salts[$0.id] == $0.salt || (salts[$0.id] == nil && $0.id < store.log.floor) }),
              salts[loaded.header.position.segment] == loaded.header.position.salt else {
            // Beside a live writer, an intact directory that names segments this reader did not list is
            // a change in progress (a compaction between its steps: the segments listed, then the
            // writer's new directory renamed in), not damage: the segments are replayed whole, and the
            // changed structure makes the next call open the store anew.
            let changeInProgress = loaded != nil && !store.writes && store.log.folder.writerIsActive
            if !DirectoryFormat.isFormerLayout(fd), !changeInProgress { // an older layout is no damage: replaced once
                store.recoveryIssues.append(.corrupted("the key directory was damaged or stale; the segments were replayed whole"))
            }
            if let info = FileIO.fileStatus(fd), info.st_mode & S_IFMT == S_IFREG { discardStaleDirectory() } // a folder or FIFO is left alone
            return nil
        }
        store.withIndex { $0 = KeyDirectory(seed: store.log.folder.storeID, base: loaded) }
        store.totalSize = loaded.header.totalSize
        store.earliestExpiry = loaded.header.earliestExpiry
        store.log.values.raise(above: loaded.header.maxFileID)
        return loaded.header.position
    }

    /// Removes the key directory an open found stale or damaged (a writer only). Left in place, it
    /// could match again later: a power cut takes a segment's unsynced tail past the directory's
    /// position (the directory itself is durable), and once later writes make the segment that long
    /// again, the next open would take the directory, with the entries the power cut took and a
    /// replay that starts mid-record. The removal is flushed for the same reason.
    func discardStaleDirectory() {
        guard store.writes, (try? store.log.folder.handle.remove(StoreFolder.directoryName)) != nil else { return }
        try? store.log.folder.handle.sync()
    }
}
