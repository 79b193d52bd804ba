import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Opening a store: the index rebuilt from the key directory and the segments, what is damaged
/// reported, and (a writer) the leftovers of interrupted work removed. Made for each open
/// (``DiskStore/open(publishing:)``); what it builds is the store's.
struct StoreOpening {
    let store: DiskStore

    /// Builds the index: the key directory read, if it is intact and matches the segments, then
    /// the records after it; without one, every record of every segment. Damaged records are skipped and
    /// reported (``DiskStore/recoveryIssues``); a writer then cuts a torn tail off, removes files no record
    /// names, and opens the last segment for appending.
    /// - Parameter publishing: Whether readers and writers in other processes are told to open the
    ///   store anew (not when this store opens anew because they changed it).
    func run(publishing: Bool = true) throws {
        if store.log.folder.kind == .v1 {
            if !store.writes { throw StorageError.unsupportedFormat(directory: store.directory, format: 1) }
            try VersionOneUpgrade(folder: store.log.folder, values: store.log.values, segmentLimit: store.thresholds.upgradeSegmentLimit).run(reporting: &store.recoveryIssues)
        } else if store.writes, StoreFolder.isV1Journal(store.directory + "/" + StoreFolder.v1JournalName) {
            try VersionOneUpgrade.removeFiles(of: store.log.folder) // an upgrade a crash cut short after its marker
        }
        let files = try store.log.folder.files()
        if store.writes {
            try store.log.folder.upgradeMarker() // before any record of format 4 is appended
            for name in files.temporary { try? store.log.folder.handle.remove(name) }
            store.log.folder.retained.adoptKept(files.kept, in: store.log.folder.handle, shared: store.log.folder.shared)
        }
        let own = try store.log.ownSegments(files.segments, issues: &store.recoveryIssues)
        // Numbers go on past kept segments too (all the store had, should a crash have left only those):
        // a segment later kept under the same name would replace one a follower still reads.
        if let kept = files.kept.max(), kept >= store.log.nextSegmentID { store.log.nextSegmentID = kept == .max ? .max : kept + 1 }
        var directory = loadDirectory(segments: own)
        let matched = try replay(own, from: directory)
        // A page read for the replay that failed its check: the directory is damaged, not stale. A store
        // with value files removes those no entry names (``finishOpening(valueFiles:keptSegments:directorySegment:)``):
        // its directory is read whole first, so that no entry of a page failing its check is left out.
        let damaged = store.withIndex { index in
            if !files.values.isEmpty { _ = index.base?.loadAll() } // a page that fails marks the base failed
            return index.baseFailed
        }
        if !matched || damaged {
            // The directory did not match the segments: start again from the segments alone.
            store.recoveryIssues.append(.corrupted(damaged ? "the key directory was damaged; the segments were replayed whole"
                                                            : "the key directory did not match the segments; they were replayed whole"))
            directory = nil
            store.directoryPages.isPartial = false
            discardStaleDirectory()
            store.withIndex { $0.replace(with: KeyDirectory(seed: store.log.folder.storeID)) }
            store.totalSize = 0
            store.earliestExpiry = .infinity
            try replay(own, from: nil)
        }
        // The directory's own segment, not a later one its uses were written at: the segments up to it
        // must stay, since without the uses the records are replayed from the directory's position.
        try finishOpening(valueFiles: files.values, keptSegments: files.kept, directorySegment: store.withIndex { $0.base?.header.position.segment })
        // A durable store appends to a segment that a process without `durable` may have started (this
        // store's past, or another writer's): a durable record in it counts as written only once the
        // segment's name is on stable storage, as for the segments it starts itself.
        if store.durable, store.writes { try? store.log.folder.handle.sync() } // best effort: a folder that cannot be flushed (read-only) takes no writes anyway
        // Without a usable directory, a large store writes one when it closes, even if nothing changed.
        if directory == nil { store.changesSinceDirectory = 1 }
        if publishing { store.log.publishStructure() } // a writer: readers in other processes open the store anew
    }

    /// Replays `own` in order over the index the key directory at `snapshot` is the base of (an
    /// empty index without one); false if the directory does not match the segments.
    @discardableResult
    func replay(_ own: [SegmentFile], from snapshot: DirectoryPosition?) throws -> Bool {
        store.log.segments = [:]
        if let snapshot, !own.contains(where: { $0.id == snapshot.segment }) { return false }
        // Every segment joins the table at once: added one by one, each was the highest as it joined
        // and was mapped with room to grow (``SegmentLog/segments``), address space for files that
        // never grow (65 MiB each by default). Nothing below looks a segment up while it replays.
        store.log.segments = Dictionary(own.map { ($0.id, $0) }, uniquingKeysWith: { _, later in later })
        var replayer = Replayer()
        for (number, file) in own.enumerated() {
            let id = file.id
            let isCopy = file.flags & SegmentFormat.compactionFlag != 0
            let covered = snapshot.map { id < $0.segment } ?? false
            if covered { continue } // its records are in the directory
            // The directory's segment is read from its position on only (the records before it are in
            // the directory): a store of one large segment opens without reading it.
            var base = 0
            var bytes: [UInt8]
            var start = file.recordsStart
            let isLast = number == own.count - 1
            let published = isLast ? publishedEnd(of: file) : nil
            if let position = snapshot, id == position.segment {
                // From the tail window before the position on: its hash must be the directory's.
                guard let window = try window(before: position, in: file, toEnd: true) else { return false }
                bytes = window.bytes
                (base, start) = (window.start, position.offset - window.start)
            } else {
                guard let all = try FileIO.readAll(file.fd, path: file.path) else { continue }
                bytes = all
            }
            // Past the published length, a copy in progress: a read is not atomic against a writer's copy
            // into a mapping of the file, and may see its later pages written and its earlier ones not
            // yet (zeros before whole records, which a scan would call damage). Read on the next call.
            if let published, published - base >= start, published - base < bytes.count { bytes.removeSubrange((published - base)...) }
            let total = base + bytes.count
            file.length = total
            let scan = bytes.withUnsafeBytes { raw in
                SegmentFormat.scan(raw, salt: file.salt, from: start) { record, offset, length in
                    store.withIndex { replayer.visit(record, segment: id, offset: base + offset, length: length, isCopy: isCopy, store: store,
                                                     index: &$0) }
                }
            }
            // A reader beside a live writer: a partial record at the end of the last segment is a
            // write in progress, not damage (the reader replays it once it is published).
            let isWriteInProgress = isLast && store.log.folder.writerIsActive
            // Nor are zeros from the last record to the end of the last segment: room a writer reserved
            // for appends (``SegmentWriteWindow``), left by a crash or still in use.
            let isUnfinishedEnd = { (damaged: Range<Int>) in
                isLast && base + damaged.upperBound == total && (isWriteInProgress || bytes[damaged].allSatisfy { $0 == 0 })
            }
            for damaged in scan.damaged where !isUnfinishedEnd(damaged) {
                let range = (base + damaged.lowerBound)..<(base + damaged.upperBound)
                let torn = range.upperBound == total
                store.recoveryIssues.append(.corrupted(torn
                    ? "the last \(range.count) bytes of segment \(SegmentFile.name(of: id)) were torn (a write cut short)\(isLast && store.writes ? " and were cut off" : "")"
                    : "bytes \(range.lowerBound)..<\(range.upperBound) of segment \(SegmentFile.name(of: id)) were damaged; the records there were skipped"))
            }
            var validEnd = base + scan.validEnd
            if let batch = replayer.endSegment() {
                if !isWriteInProgress {
                    store.recoveryIssues.append(.corrupted("a batch at bytes \(batch.lowerBound)..<\(batch.upperBound) of segment \(SegmentFile.name(of: id)) was cut short; none of it was applied\(isLast && store.writes ? ", and it was cut off" : "")"))
                }
                // Cut off whole: records appended later must never be read as the rest of it.
                validEnd = min(validEnd, batch.lowerBound)
            }
            if isLast, validEnd < total {
                if store.writes { try file.truncate(to: validEnd) } else { file.length = validEnd }
            }
        }
        // Segments before the last `clear` hold nothing (a removeAll whose process ended before it
        // had deleted them): a writer deletes them now, in any order, since the clear stays.
        if store.writes, let cleared = replayer.lastClearSegment {
            for (id, segment) in store.log.segments where id < cleared {
                store.log.segments[id] = nil
                store.log.retire(segment)
            }
        }
        return true
    }

    /// Where the records a live writer published end in `file`, the segment it appends to, for a store
    /// that only reads (nil otherwise): read before the file's bytes are, with acquire ordering, so every
    /// byte before it is written.
    private func publishedEnd(of file: SegmentFile) -> Int? {
        let folder = store.log.folder
        guard !store.writes, folder.writerIsActive, let shared = folder.shared, shared.describes(store: folder.storeID) else { return nil }
        // The length read with the segment it is of: a writer that moved to its next segment between the
        // two reads would otherwise cut this one at the next one's length.
        let structure = shared.structure
        shared.acquire()
        guard structure.segment == file.id, structure.salt == file.salt, structure.length >= file.recordsStart else { return nil }
        return structure.length
    }

    /// The bytes of `file` from the tail window before `position` to the file's end (`toEnd`) or to the
    /// position, and the offset they start at; nil unless `file` is the position's segment (its salt),
    /// reaches the position (not before its first record), and holds before it the bytes the position
    /// was taken after (its tail hash).
    func window(before position: DirectoryPosition, in file: SegmentFile, toEnd: Bool) throws -> (bytes: [UInt8], start: Int)? {
        let size = try FileIO.size(file.fd, path: file.path)
        guard file.salt == position.salt, size >= position.offset, position.offset >= file.recordsStart else { return nil }
        let start = max(0, position.offset - DirectoryFormat.tailWindow)
        let end = toEnd ? size : position.offset
        let bytes = try FileIO.read(file.fd, at: start, count: end - start, path: file.path)
        guard bytes.count == end - start,
              bytes.withUnsafeBytes({ DirectoryFormat.tailHash($0, at: position.offset - start) }) == position.tailHash else { return nil }
        return (bytes, start)
    }

    /// Accounting, clean-up and the active segment, once the index is rebuilt.
    /// `keptSegments`: those a writer kept for followers (``RetainedSegments``), whose records may name value files.
    func finishOpening(valueFiles: [UInt64], keptSegments: [UInt32], directorySegment snapshotSegment: UInt32?) throws {
        let liveBytes = store.withIndex { $0.liveBytesBySegment() }
        // Only a store with value files lists the ones its entries name (a pass over every entry).
        var referencedFiles = Set<UInt64>()
        if !valueFiles.isEmpty {
            store.withIndex { index in index.forEachValue { record in if let id = record.fileID { referencedFiles.insert(id) } } }
        }
        let maxFile = referencedFiles.max() ?? 0
        // Expiry lower bound: the directory's, and the records replayed after it.
        store.earliestExpiry = store.withIndex { $0.overlayEntries.reduce(store.earliestExpiry) { min($0, $1.value.expiry) } }
        for segment in store.log.segments.values {
            segment.deadBytes = max(0, segment.recordBytes - liveBytes[segment.id, default: 0])
        }
        store.log.values.raise(above: max(maxFile, valueFiles.max() ?? 0))
        guard store.writes else { return }
        // The oldest segments, below the directory's, that no entry names: the inputs of a compaction
        // whose removal a crash cut short. Only a run from the oldest on: a segment that an older one
        // survives may hold the tombstones that keep that one's records dead in a full replay.
        if let snapshotSegment {
            // Not one the directory names: it would be rejected at every open after (a segment it
            // names is gone) until rewritten. It goes once a later directory no longer names it.
            let named = Set(store.withIndex { $0.base?.header.segments.map(\.id) ?? [] })
            for id in store.log.segments.keys.sorted() {
                guard id < snapshotSegment, liveBytes[id] == nil, let segment = store.log.segments[id] else { break }
                if named.contains(id) {
                    store.changesSinceDirectory += 1 // rewritten at close (a large store), without it
                    break
                }
                store.log.segments[id] = nil
                store.log.retire(segment)
            }
        }
        // Value files no record names: written by a write that a crash cut short before its record, or
        // removed by one that a process following the store had not read (a removeAll's, kept for it by
        // the writer before: kept on while it may still read a record of the segments up to the newest).
        // Not while a segment of the store could not be read: its records may name them.
        if !store.log.hasUnreadSegments {
            // The newest record there may be: the end of the newest segment, or of a kept one past it.
            var newest = store.log.segments.keys.max().flatMap { store.log.segments[$0] }.map { ($0.id, $0.length) } ?? (0, 0)
            if let kept = keptSegments.max(), kept >= newest.0 { newest = (kept, Int(Int32.max)) }
            for id in valueFiles where !referencedFiles.contains(id) {
                store.log.folder.retained.retireValueFile(id, namedAt: newest, folder: store.log.values.handle, shared: store.log.folder.shared)
            }
        }
        // Never a compaction's output, whose set records replay as copies (a power cut can take the
        // segment a step started after it, and leave it the last).
        if let last = store.log.segments.keys.max(), let file = store.log.segments[last], file.length < store.thresholds.segmentLimit,
           file.flags & SegmentFormat.compactionFlag == 0 {
            store.log.activate(file)
            try store.log.groupCommit.switchFile(to: file)
        } else {
            try store.log.roll()
        }
    }
}
