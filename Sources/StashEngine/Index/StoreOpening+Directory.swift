import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The key directory file read at open as the index's base, with the key uses file written since
// (Docs/Format.md, "Key directory", "Key uses").

extension StoreOpening {
    /// Reads the key directory as the index's base (``LoadedDirectory``), with its uses as of a later
    /// position where a key uses file has them; returns the position to replay from, or nil (and an empty
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
        let position = loadUses(of: loaded, segments: segments) ?? loaded.header.position
        store.withIndex { $0 = KeyDirectory(seed: store.log.folder.storeID, base: loaded) }
        store.totalSize = loaded.header.totalSize
        store.earliestExpiry = loaded.header.earliestExpiry
        store.log.values.raise(above: loaded.header.maxFileID)
        return position
    }

    /// Gives `directory` the uses of the key uses file (``UsesFormat``) if it is intact, names
    /// `directory`, and its position is one the segments hold, at or after the directory's; returns
    /// that position. Otherwise nil: the records are replayed from the directory's position, the
    /// access records among them, so nothing is lost. One that names another directory (written for
    /// the one this replaced, a crash before it was removed) is no damage and is not reported.
    private func loadUses(of directory: LoadedDirectory, segments: [SegmentFile]) -> DirectoryPosition? {
        let handle = store.log.folder.handle
        let fd: Int32
        do {
            fd = try handle.open(StoreFolder.usesName, O_RDONLY | O_NONBLOCK) // a FIFO in its place must not block
        } catch {
            if !FileIO.isErrno(error, .ENOENT) { store.recoveryIssues.append(.corrupted("the key uses file could not be opened (\(error)); uses were replayed")) }
            return nil
        }
        defer { FileIO.closeDescriptor(fd) }
        guard let info = FileIO.fileStatus(fd), info.st_mode & S_IFMT == S_IFREG else { return nil } // not the store's: left alone
        let length = UsesFormat.length(slotCount: directory.slotCount)
        let bytes = HugePages.allocate(byteCount: length)
        defer { bytes.deallocate() } // its uses are copied into the directory's
        let read = info.st_size == length ? try? FileIO.read(fd, at: 0, into: bytes, path: handle.filePath(StoreFolder.usesName)) : nil
        guard read == length, let header = UsesFormat.parse(UnsafeRawBufferPointer(bytes)), header.store == store.log.folder.storeID else {
            store.recoveryIssues.append(.corrupted("the key uses file was damaged; uses since the key directory were replayed"))
            discardUses()
            return nil
        }
        guard header.directory == directory.header.identity, header.slotCount == directory.slotCount else {
            discardUses()
            return nil
        }
        guard holds(header.position, from: directory.header.position, segments: segments) else {
            store.recoveryIssues.append(.corrupted("the key uses file did not match the segments; uses since the key directory were replayed"))
            discardUses()
            return nil
        }
        directory.takeUses(UnsafeRawBufferPointer(rebasing: bytes[UsesFormat.headerLength...]), nextRecency: header.nextRecency)
        return header.position
    }

    /// Whether `position` is at or after `start`, in a segment of `segments` with its salt, within it,
    /// and after the bytes it was written after (its tail hash), as ``replay(_:from:)`` checks a directory's.
    private func holds(_ position: DirectoryPosition, from start: DirectoryPosition, segments: [SegmentFile]) -> Bool {
        guard position.segment > start.segment || (position.segment == start.segment && position.offset >= start.offset),
              let file = segments.first(where: { $0.id == position.segment }), file.salt == position.salt,
              position.offset >= file.recordsStart, let size = try? FileIO.size(file.fd, path: file.path), size >= position.offset else { return false }
        let window = max(0, position.offset - DirectoryFormat.tailWindow)
        guard let bytes = try? FileIO.read(file.fd, at: window, count: position.offset - window, path: file.path),
              bytes.count == position.offset - window else { return false }
        return bytes.withUnsafeBytes { DirectoryFormat.tailHash($0, at: $0.count) } == position.tailHash
    }

    /// Removes a key uses file an open did not take (a writer only): it would never be taken later. A
    /// folder or FIFO in its place is not the store's, and left alone.
    private func discardUses() {
        let handle = store.log.folder.handle
        guard store.writes, let info = handle.status(of: StoreFolder.usesName), info.st_mode & S_IFMT == S_IFREG else { return }
        try? handle.remove(StoreFolder.usesName)
    }

    /// Removes the key directory an open found stale or damaged (a writer only). Left in place, it
    /// could match again later: a power cut takes a segment's unsynced tail past the directory's
    /// position (the directory itself is durable), and once later writes make the segment that long
    /// again, the next open would take the directory, with the entries the power cut took and a
    /// replay that starts mid-record. The removal is flushed for the same reason.
    func discardStaleDirectory() {
        guard store.writes else { return }
        discardUses() // it names the directory
        guard (try? store.log.folder.handle.remove(StoreFolder.directoryName)) != nil else { return }
        try? store.log.folder.handle.sync()
    }
}
