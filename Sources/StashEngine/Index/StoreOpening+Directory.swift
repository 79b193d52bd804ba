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
        store.withIndex { $0.replace(with: KeyDirectory(seed: store.log.folder.storeID)) }
        store.totalSize = 0
        store.earliestExpiry = .infinity
        store.directoryPages.isPartial = false
        // Pages read as lookups need them, the rest by the queue's first operation (``DiskStore/checkIndexWhole()``).
        let lazily = store.directoryPages.nextOpenIsLazy
        store.directoryPages.nextOpenIsLazy = false
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
        var uses = UsesOffer()
        defer { uses.close() }
        do {
            loaded = try LoadedDirectory(fd: fd, path: store.log.folder.handle.filePath(StoreFolder.directoryName),
                                         limit: DirectoryFormat.lengthLimit(segmentBytes: segments.reduce(0) { $0 + $1.length }, segments: segments.count),
                                         lazily: lazily) {
                offerUses(for: $0, segments: segments, offer: &uses)
            }
        } catch {
            // Unreadable says nothing of its content (a device locked under data protection, say): kept.
            store.recoveryIssues.append(.corrupted("the key directory could not be read (\(error)); the segments were replayed whole"))
            return nil
        }
        // One a page of which failed while this store had it open (a reader, which cannot remove it): reported then.
        if let loaded, loaded.header.identity == store.directoryPages.refused { return nil }
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
            // Nor is one whose position's segment the floor supersedes: steps drained it after the
            // directory was written, and the writer was killed before its close wrote the next one. It
            // cannot be used (the removals after its position went with that segment).
            let superseded = loaded.map { $0.header.store == store.log.folder.storeID && salts[$0.header.position.segment] == nil
                && $0.header.position.segment < store.log.floor } ?? false
            if !DirectoryFormat.isFormerLayout(fd), !changeInProgress, !superseded { // an older layout is no damage: replaced once
                store.recoveryIssues.append(.corrupted("the key directory was damaged or stale; the segments were replayed whole"))
            }
            if let info = FileIO.fileStatus(fd), info.st_mode & S_IFMT == S_IFREG { discardStaleDirectory() } // a folder or FIFO is left alone
            return nil
        }
        if loaded.usesRejected { uses.issue = "the key uses file was damaged; uses since the key directory were replayed" }
        if let issue = uses.issue { store.recoveryIssues.append(.corrupted(issue)) }
        if uses.discard || uses.issue != nil { discardUses() }
        let position = loaded.usesTaken?.position ?? loaded.header.position
        store.directoryPages.isPartial = loaded.isPartial
        store.withIndex { $0.replace(with: KeyDirectory(seed: store.log.folder.storeID, base: loaded)) }
        store.totalSize = loaded.header.totalSize
        store.earliestExpiry = loaded.header.earliestExpiry
        store.log.values.raise(above: loaded.header.maxFileID)
        return position
    }

    /// What became of the key uses file an open looked at: its descriptor while the directory is read,
    /// what to report, and whether a writer removes it.
    struct UsesOffer {
        var fd: Int32 = -1
        var issue: String?
        var discard = false

        func close() {
            if fd >= 0 { FileIO.closeDescriptor(fd) }
        }
    }

    /// The key uses file (``UsesFormat``), offered to the directory `header` is of if its header is
    /// intact, names that directory, and its position is one the segments hold at or after the
    /// directory's; nil otherwise, and the records are then replayed from the directory's position, the
    /// access records among them, so nothing is lost. One that names another directory (written for
    /// the one this replaced, a crash before it was removed) is no damage and is not reported.
    private func offerUses(for header: DirectoryFormat.Header, segments: [SegmentFile], offer: inout UsesOffer) -> LoadedDirectory.UsesFile? {
        let handle = store.log.folder.handle
        let path = handle.filePath(StoreFolder.usesName)
        do {
            offer.fd = try handle.open(StoreFolder.usesName, O_RDONLY | O_NONBLOCK) // a FIFO in its place must not block
        } catch {
            if !FileIO.isErrno(error, .ENOENT) { offer.issue = "the key uses file could not be opened (\(error)); uses were replayed" }
            return nil
        }
        guard let info = FileIO.fileStatus(offer.fd), info.st_mode & S_IFMT == S_IFREG else { return nil } // not the store's: left alone
        let head = (try? FileIO.read(offer.fd, at: 0, count: UsesFormat.headerLength, path: path)) ?? []
        // Of the layout before (one hash over its uses): no damage, and never taken: a writer removes it.
        if head.starts(with: UsesFormat.formerMagic) {
            offer.discard = true
            return nil
        }
        guard let length = FileNumber.int(info.st_size),
              let uses = head.withUnsafeBytes({ UsesFormat.parseHeader($0, fileLength: length) }), uses.store == store.log.folder.storeID else {
            offer.issue = "the key uses file was damaged; uses since the key directory were replayed"
            return nil
        }
        guard uses.directory == header.identity, uses.slotCount == header.slotCount, header.hasPageTable else {
            offer.discard = true
            return nil
        }
        guard holds(uses.position, from: header.position, segments: segments) else {
            offer.issue = "the key uses file did not match the segments; uses since the key directory were replayed"
            return nil
        }
        return LoadedDirectory.UsesFile(fd: offer.fd, path: path, header: uses)
    }

    /// Whether `position` is at or after `start`, and a segment of `segments` holds it as ``replay(_:from:)``
    /// checks a directory's (``window(before:in:toEnd:)``).
    private func holds(_ position: DirectoryPosition, from start: DirectoryPosition, segments: [SegmentFile]) -> Bool {
        guard position.segment > start.segment || (position.segment == start.segment && position.offset >= start.offset),
              let file = segments.first(where: { $0.id == position.segment }) else { return false }
        return (try? window(before: position, in: file, toEnd: false)) != nil
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
