import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension DiskStore {
    /// Builds the index: the key directory read, if it is intact and matches the segments, then
    /// the records after it; without one, every record of every segment. Damaged records are skipped and
    /// reported (``recoveryIssues``); a writer then cuts a torn tail off, removes files no record
    /// names, and opens the last segment for appending.
    /// - Parameter publishing: Whether readers and writers in other processes are told to open the
    ///   store anew (not when this store opens anew because they changed it).
    package func open(publishing: Bool = true) throws {
        if folder.kind == .v1 {
            if !writes { throw StorageError.unsupportedFormat(directory: directory, format: 1) }
            try VersionOneUpgrade(folder: folder, values: values, segmentLimit: thresholds.upgradeSegmentLimit).run(reporting: &recoveryIssues)
        } else if writes, FileManager.default.fileExists(atPath: directory + "/" + StoreFolder.v1JournalName),
                  StoreFolder.isV1Journal(directory + "/" + StoreFolder.v1JournalName) {
            try VersionOneUpgrade.removeFiles(of: folder) // an upgrade a crash cut short after its marker
        }
        let files = try folder.files()
        if writes {
            try folder.upgradeMarker() // before any record of format 4 is appended
            for name in files.temporary { try? folder.handle.remove(name) }
        }
        let own = try ownSegments(files.segments)
        var directory = loadDirectory(segments: own)
        if try !replay(own, from: directory) {
            // The directory did not match the segments: start again from the segments alone.
            recoveryIssues.append(.corrupted("the key directory did not match the segments; they were replayed whole"))
            directory = nil
            discardStaleDirectory()
            withIndex { $0 = KeyDirectory(seed: folder.storeID) }
            totalSize = 0
            earliestExpiry = .infinity
            try replay(own, from: nil)
        }
        try finishOpening(valueFiles: files.values, directorySegment: directory?.segment)
        // A durable store appends to a segment that a process without `durable` may have started (this
        // store's past, or another writer's): a durable record in it counts as written only once the
        // segment's name is on stable storage, as for the segments it starts itself.
        if durable, writes { try? folder.handle.sync() } // best effort: a folder that cannot be flushed (read-only) takes no writes anyway
        // Without a usable directory, a large store writes one when it closes, even if nothing changed.
        if directory == nil { changesSinceDirectory = 1 }
        if publishing { publishStructure() } // a writer: readers in other processes open the store anew
    }

    /// The segments that are this store's and current, oldest first, each opened (header read).
    ///
    /// A segment of another store (its header names another identity or another number than its
    /// file's name, or it has a version-2 header where the store has none) is reported and left
    /// alone, and so is a link, folder or device in a segment's place. A segment numbered below the
    /// floor of a later one (merged by a compaction, emptied by a `removeAll`: a backup restored
    /// beside newer files, or inputs a crash kept from being deleted) is superseded: reported, never
    /// replayed, and removed by a writer. One without a valid header is reported; a writer removes it
    /// only if it is no longer than a header (a crash right after it was created).
    private func ownSegments(_ ids: [UInt32]) throws -> [SegmentFile] {
        var opened: [SegmentFile] = []
        for id in ids {
            let name = SegmentFile.name(of: id)
            let segment: SegmentFile?
            do {
                segment = try SegmentFile.open(id, in: folder.handle, writable: writes, wholeFile: false)?.file
            } catch where FileIO.isErrno(error, .ENOENT) {
                continue // deleted since the listing (old segments a removeAll of this process deletes in the background)
            } catch where [.ELOOP, .EISDIR, .ENXIO, .EOPNOTSUPP].contains(where: { FileIO.isErrno(error, $0) }) {
                recoveryIssues.append(.corrupted("\(name) is not a regular file; it was ignored and left alone"))
                hasUnreadSegments = true
                continue
            }
            guard let segment else {
                // Both header copies damaged, or a crash right after the file was created: without
                // its salt no record in it can be verified.
                recoveryIssues.append(.corrupted("segment \(name) has no valid header; its records were dropped"))
                if writes, let size = fileSize(name), size <= SegmentFormat.headerLength {
                    try? folder.handle.remove(name)
                } else {
                    hasUnreadSegments = true
                }
                continue
            }
            opened.append(segment)
        }
        // A header that names another number than the file's name: copied or renamed from elsewhere.
        opened.removeAll { segment in
            guard !segment.path.hasSuffix("/" + SegmentFile.name(of: segment.id)) else { return false }
            recoveryIssues.append(.corrupted("\((segment.path as NSString).lastPathComponent) holds segment \(SegmentFile.name(of: segment.id)) of this or another store (a copy); it was ignored and left alone"))
            return true
        }
        if folder.needsIdentity || folder.isFormat2 { try adoptIdentity(from: opened) }
        var own: [SegmentFile] = []
        for segment in opened {
            if segment.store.map({ $0 == folder.storeID }) ?? (segment.id < folder.legacyBelow) {
                own.append(segment)
            } else {
                recoveryIssues.append(.corrupted("segment \(SegmentFile.name(of: segment.id)) belongs to another store; it was ignored and left alone"))
            }
        }
        floor = own.map(\.floor).max() ?? 0
        // Numbers go on after the store's own segments; a number a file that is not the store's has is
        // passed over when the store gets there (``roll(floor:)``), never reused or overwritten.
        if let last = own.last?.id { nextSegmentID = last == .max ? .max : last + 1 }
        let superseded = own.filter { $0.id < floor }
        // A reader beside a live writer: the writer deletes superseded segments in the background
        // (after a removeAll or a compaction); not damage.
        for segment in superseded where !folder.writerIsActive {
            recoveryIssues.append(.corrupted("segment \(SegmentFile.name(of: segment.id)) is superseded (merged by a compaction or emptied by removeAll); it was ignored\(writes ? " and removed" : "")"))
            if writes { segment.remove() }
        }
        return own.filter { $0.id >= floor }
    }

    /// The identity of a store whose marker was damaged, or says format 2 (no identity), from its
    /// segments: the one most of them carry. A writer writes it into the marker, unless the segments
    /// disagree without a majority (then it is used for this open only, and reported: a segment
    /// copied in must not take a store over). Its version-2 segments stay its own.
    private func adoptIdentity(from opened: [SegmentFile]) throws {
        var counts: [UInt64: (count: Int, oldest: UInt32)] = [:]
        for segment in opened {
            guard let store = segment.store else { continue }
            counts[store, default: (0, segment.id)].count += 1
        }
        // Most segments first; on a tie, the identity of the oldest segment.
        let ranked = counts.sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.value.oldest < $1.value.oldest }
        let isCertain = ranked.count < 2 || ranked[0].value.count > ranked[1].value.count
        if !isCertain {
            recoveryIssues.append(.corrupted("the store's segments name \(ranked.count) identities and its marker none: \(hex(ranked[0].key, digits: 16)) was assumed and the marker left as it is; run `stash check`"))
        }
        let legacy = opened.filter { $0.store == nil }.map(\.id).max().map { $0 == .max ? .max : $0 + 1 } ?? 0
        try folder.adoptIdentity(ranked.first?.key, legacyBelow: legacy, rewrite: isCertain)
    }

    /// The size of the file `name` of the store's folder, nil if it cannot be had.
    private func fileSize(_ name: String) -> Int? {
        var info = stat()
        guard fstatat(folder.handle.fd, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return nil }
        return FileNumber.int(info.st_size)
    }

    /// Replays `own` in order over the index the key directory at `snapshot` is the base of (an
    /// empty index without one); false if the directory does not match the segments.
    @discardableResult
    private func replay(_ own: [SegmentFile], from snapshot: DirectoryPosition?) throws -> Bool {
        segments = [:]
        if let snapshot, !own.contains(where: { $0.id == snapshot.segment }) { return false }
        var replayer = Replayer()
        for (number, file) in own.enumerated() {
            let id = file.id
            segments[id] = file
            let covered = snapshot.map { id < $0.segment } ?? false
            if covered { continue } // its records are in the directory
            // The directory's segment is read from its position on only (the records before it are in
            // the directory): a store of one large segment opens without reading it.
            var base = 0
            let bytes: [UInt8]
            var start = file.recordsStart
            if let position = snapshot, id == position.segment {
                // From the tail window before the position on: its hash must be the directory's.
                let size = try FileIO.size(file.fd, path: file.path)
                guard file.salt == position.salt, size >= position.offset, position.offset >= file.recordsStart else { return false }
                let window = max(0, position.offset - DirectoryFormat.tailWindow)
                bytes = try FileIO.read(file.fd, at: window, count: size - window, path: file.path)
                guard bytes.count == size - window,
                      bytes.withUnsafeBytes({ DirectoryFormat.tailHash($0, at: position.offset - window) }) == position.tailHash else { return false }
                (base, start) = (window, position.offset - window)
            } else {
                guard let all = try FileIO.readAll(file.fd, path: file.path) else { continue }
                bytes = all
            }
            let total = base + bytes.count
            file.length = total
            let scan = bytes.withUnsafeBytes { raw in
                SegmentFormat.scan(raw, salt: file.salt, from: start) { record, offset, length in
                    withIndex { replayer.visit(record, segment: id, offset: base + offset, length: length, store: self, index: &$0) }
                }
            }
            let isLast = number == own.count - 1
            // A reader beside a live writer: a partial record at the end of the last segment is a
            // write in progress, not damage (the reader replays it once it is published).
            let isWriteInProgress = isLast && folder.writerIsActive
            for damaged in scan.damaged where !(isWriteInProgress && base + damaged.upperBound == total) {
                let range = (base + damaged.lowerBound)..<(base + damaged.upperBound)
                let torn = range.upperBound == total
                recoveryIssues.append(.corrupted(torn
                    ? "the last \(range.count) bytes of segment \(SegmentFile.name(of: id)) were torn (a write cut short)\(isLast && writes ? " and were cut off" : "")"
                    : "bytes \(range.lowerBound)..<\(range.upperBound) of segment \(SegmentFile.name(of: id)) were damaged; the records there were skipped"))
            }
            var validEnd = base + scan.validEnd
            if let batch = replayer.endSegment() {
                if !isWriteInProgress {
                    recoveryIssues.append(.corrupted("a batch at bytes \(batch.lowerBound)..<\(batch.upperBound) of segment \(SegmentFile.name(of: id)) was cut short; none of it was applied\(isLast && writes ? ", and it was cut off" : "")"))
                }
                // Cut off whole: records appended later must never be read as the rest of it.
                validEnd = min(validEnd, batch.lowerBound)
            }
            if isLast, validEnd < total {
                if writes { try file.truncate(to: validEnd) } else { file.length = validEnd }
            }
        }
        // Segments before the last `clear` hold nothing (a removeAll whose process ended before it
        // had deleted them): a writer deletes them now, in any order, since the clear stays.
        if writes, let cleared = replayer.lastClearSegment {
            for (id, segment) in segments where id < cleared {
                segments[id] = nil
                segment.remove()
            }
        }
        return true
    }

    /// Accounting, clean-up and the active segment, once the index is rebuilt.
    private func finishOpening(valueFiles: [UInt64], directorySegment snapshotSegment: UInt32?) throws {
        let liveBytes = withIndex { $0.liveBytesBySegment() }
        // Only a store with value files lists the ones its entries name (a pass over every entry).
        var referencedFiles = Set<UInt64>()
        if !valueFiles.isEmpty {
            withIndex { index in index.forEachValue { record in if let id = record.fileID { referencedFiles.insert(id) } } }
        }
        let maxFile = referencedFiles.max() ?? 0
        // Expiry lower bound: the directory's, and the records replayed after it.
        earliestExpiry = withIndex { $0.overlayEntries.reduce(earliestExpiry) { min($0, $1.value.expiry) } }
        for segment in segments.values {
            segment.deadBytes = max(0, segment.recordBytes - liveBytes[segment.id, default: 0])
        }
        values.raise(above: max(maxFile, valueFiles.max() ?? 0))
        guard writes else { return }
        // The oldest segments, below the directory's, that no entry names: the inputs of a compaction
        // whose removal a crash cut short. Only a run from the oldest on: a segment that an older one
        // survives may hold the tombstones that keep that one's records dead in a full replay.
        if let snapshotSegment {
            // Not one the directory names: it would be rejected at every open after (a segment it
            // names is gone) until rewritten. It goes once a later directory no longer names it.
            let named = Set(withIndex { $0.base?.header.segments.map(\.id) ?? [] })
            for id in segments.keys.sorted() {
                guard id < snapshotSegment, liveBytes[id] == nil, let segment = segments[id] else { break }
                if named.contains(id) {
                    changesSinceDirectory += 1 // rewritten at close (a large store), without it
                    break
                }
                segments[id] = nil
                segment.remove()
            }
        }
        // Value files no record names: written by a write that a crash cut short before its record. Not
        // while a segment of the store could not be read: its records may name them.
        if !hasUnreadSegments {
            for id in valueFiles where !referencedFiles.contains(id) { values.remove(id) }
        }
        if let last = segments.keys.max(), let file = segments[last], file.length < thresholds.segmentLimit {
            active = file
            try groupCommit.switchFile(to: file)
        } else {
            try roll()
        }
    }

    /// The store's folder was removed underneath (and maybe made anew, by this process or another):
    /// opens whatever stands at the path now, anew — creating a new, empty store if nothing does,
    /// taking the lock, reading the marker and the identity, replaying its segments — as if the
    /// store had just been opened. A folder of the user's, or a store another process has open, is
    /// refused (``StorageError/notAStore(directory:)``, ``StorageError/inUse(directory:)``), and
    /// nothing is written to it.
    package func reopen() throws {
        let fresh = try StoreFolder(directory: directory, sharing: sharing.mode)
        sharing.adoptReopened(fresh, replacing: folder)
        folder = fresh
        values.handle = fresh.handle
        forgetIndex(seed: 0)
        recoveryIssues += fresh.issues
        try open()
        didReopen(fresh.handle)
    }

    /// Drops what the store knows of its files before it opens them anew (``open(publishing:)``): the
    /// index, the memory layers' copies, the segments, and a compaction under way (discarded).
    func forgetIndex(seed: UInt64) {
        epoch += 1
        invalidateMemory(nil) // before the index: see `sharedIndex`
        withIndex { $0 = KeyDirectory(seed: seed) }
        totalSize = 0
        earliestExpiry = .infinity
        segments = [:]
        pendingAccesses.removeAll()
        active = nil
        nextSegmentID = 1
        floor = 0
        hasUnreadSegments = false
    }

}
