import Foundation

// A writer in several processes (``DiskConfig/allowsWritersInOtherProcesses``) compacts inside its
// calls, holding the folder's lock; on iOS a process suspended while it holds that lock is killed
// (0xDEAD10CC), so each call does a bounded part of the work: a *step* copies at most
// ``DiskStore/Thresholds/compactionStep`` bytes of live records (one longer record alone).
//
// A *cycle* merges the segments numbered below its `end`: when it starts, the active segment is
// sealed and `end` is the new active one's number. Each step takes the oldest of them, oldest first:
//
// 1. It reads their records from where the last step stopped (a window of about the bound) and copies
//    each *live* one (a set record the index points at) into a new segment, the step's output, whose
//    number is above every segment's (the active one's too), flagged as compaction output.
// 2. The output is flushed; a new active segment is started above it, so later writes replay after the
//    copies; then the output is renamed to its segment name, the folder flushed, and the index points at
//    the copies.
// 3. Segments read to their end are *drained*: the step started with the oldest, so they are the
//    oldest segments of the store. A new active segment whose `floor` is the first segment left is
//    started (the one of 2 goes again, empty), then the drained ones are deleted, oldest first.
//
// Why the store is right at every instant (replay applies segments in number order; a key's value is
// its last set or remove record, after the last clear):
// - A copy is of a key's last record, so no record of that key follows the original; the copy, later
//   still, replays to the same entry. Every write after the step goes to the new active segment, above
//   the output. An output a kill left unpublished (`.compacting`) is never replayed and is removed at
//   the next open.
// - A drained segment holds no live record, and no segment is older: deleting it removes only records
//   later ones override, tombstones with nothing older to shadow, and clears with nothing before them.
//   So deleting it, or a kill that keeps it, gives the same index. Tombstones are dropped this way only.
// - A record once dead stays dead (a key's last record only moves forward in replay order), so where a
//   step stopped is a valid place for any process's next step to go on from; a process that does not
//   know it starts at the segment's first live record (a pass over the index), or at its end if there
//   is none: the segment is drained. It is kept only once the step's copies are
//   published: a step that fails (a full disk, its output's name taken) leaves it where it was.
// - The floor makes a drained segment restored from a backup superseded. A key directory that names a
//   drained segment still holds (``StoreOpening/loadDirectory(segments:)``): every entry it has there
//   moved by a record after its position, since drained segments are older than the directory's own.
// - Before a drained segment goes, the output holding the copies of its live records is on stable
//   storage (flushed, its name flushed with the folder).
//
// Other processes see the output and the new active segment as any new segment: they open the store
// anew from its files at their next call (a reader too); observers are not told of copies (an output is
// flagged, ``CatchingUp/changes(after:through:in:)``).

/// A shared writer's compaction cycle under way, and what its steps did (for tests).
package struct CompactionCycle {
    /// Segments numbered below this are merged by the cycle under way; nil: none.
    package var end: UInt32?
    /// Where the last step stopped: every record of segment `segment` (salt `salt`) before `offset` is dead.
    package var resume: (segment: UInt32, salt: UInt64, offset: Int)?
    /// Steps that copied or deleted something, the most bytes of records a step copied and read, and the
    /// segments deleted.
    package var steps = 0
    var largestCopy = 0
    var largestRead = 0
    var drained = 0
    /// Steps that failed (their copies discarded).
    package var failed = 0
    /// Whether steps deleted drained segments since the key directory was written. A replay gives the
    /// entry of a copy whose original it no longer finds (not in a segment, not in the directory) the
    /// next use, as any set record, so only a directory keeps those entries' place in the order of use:
    /// a small store writes one before the step deletes them (``Thresholds/stepDirectoryMaximum``), and
    /// the close writes one then, whatever the store's size (``DiskStore/finishWriting()``).
    var drainedSinceDirectory = false
}

extension Compaction {
    /// Whether dead bytes outweigh live ones and exceed ``Thresholds/compactionMinimum``.
    var isDue: Bool {
        let (dead, total) = store.log.byteCounts
        return dead >= store.thresholds.compactionMinimum && dead * 2 > total
    }

    /// Runs a step of the cycle under way; without one, starts one if a compaction is due.
    func stepIfNeeded() {
        store.assertOnQueue()
        guard let active = store.log.active else { return }
        if let end = store.compactionCycle.end, !store.log.segments.keys.contains(where: { $0 < min(end, active.id) }) {
            store.compactionCycle.end = nil // done
        }
        if store.compactionCycle.end == nil {
            guard isDue else { return }
            do {
                try store.log.flushAccesses()
                if active.recordBytes > 0 { try store.log.roll() }
            } catch {
                return // housekeeping: the next call tries again
            }
            store.compactionCycle.end = store.log.active?.id
        }
        do {
            try step()
        } catch {
            store.compactionCycle.failed += 1 // housekeeping: the next call goes on from where the last step that worked stopped
        }
    }

    /// One step of the cycle (see the top of this file).
    func step() throws {
        store.assertOnQueue()
        guard let cycleEnd = store.compactionCycle.end, let active = store.log.active else { return }
        let limit = max(1, store.thresholds.compactionStep)
        // Access records name positions this step may move: written first, and the copies carry the last use.
        try store.log.flushAccesses()
        var copier = Copier()
        var drained: [SegmentFile] = []
        var read = 0
        // Where this step stops: kept only once its copies are published (the records before it are dead then).
        var resume = store.compactionCycle.resume
        for segment in store.log.segments.values.filter({ $0.id < min(cycleEnd, active.id) }).sorted(by: { $0.id < $1.id }) {
            guard read < limit, copier.buffer.count < limit else { break }
            let size = try FileIO.size(segment.fd, path: segment.path)
            // A sealed segment cut shorter by another program: read again from its start, or left alone.
            guard size >= segment.recordsStart else { break }
            var start: Int
            if let hint = store.compactionCycle.resume, hint.segment == segment.id, hint.salt == segment.salt, hint.offset <= size {
                start = hint.offset
            } else {
                start = max(segment.recordsStart, firstLiveOffset(in: segment.id, size: size))
            }
            let window = try records(of: segment, from: start, size: size, count: limit)
            read += window.bytes.count
            var stop = window.next
            try window.bytes.withUnsafeBytes { raw in
                for (record, offset, length) in window.records {
                    guard case .set(let key, let info) = record, let current = store.withIndex({ $0.peek(key) }),
                          current.segment == segment.id, Int(current.offset) == offset, current.value == info.value else { continue }
                    let at = offset - start
                    let before = copier.buffer.count
                    try copier.copy(key, current, inline: UnsafeRawBufferPointer(rebasing: raw[(at + info.valueOffset)..<(at + length)]),
                                    log: store.log)
                    if before > 0, copier.buffer.count > limit { // over the bound: for the next step
                        copier.undoLast(to: before)
                        stop = offset
                        break
                    }
                }
            }
            guard stop == size else {
                resume = (segment.id, segment.salt, stop)
                break
            }
            drained.append(segment)
        }
        store.compactionCycle.largestRead = max(store.compactionCycle.largestRead, read)
        guard copier.output != nil || !drained.isEmpty else {
            store.compactionCycle.resume = resume
            return
        }
        store.compactionCycle.steps += 1
        if let output = copier.output {
            do {
                try output.append(copier.buffer)
                try output.sync()
                // Writes go above the output from now on (it replays before them), then it is published.
                try store.log.roll()
                try output.publish()
                try store.log.folder.handle.sync()
            } catch {
                output.remove()
                throw error
            }
            store.log.segments[output.id] = output
            store.withIndex { index in
                for (key, from, to) in copier.moved {
                    _ = index.update(key) { record in (record.segment, record.offset, record.length) = (to.segment, to.offset, to.length) }
                    store.log.segments[from.segment]?.deadBytes += FileNumber.saturating(from.length)
                }
            }
            store.compactionCycle.largestCopy = max(store.compactionCycle.largestCopy, copier.buffer.count)
        }
        store.compactionCycle.resume = resume
        guard !drained.isEmpty else { return }
        // The copies are on stable storage: a segment whose floor is the first one left supersedes the
        // drained ones (the one just started goes again if nothing was written to it), then they go.
        let drainedIDs = Set(drained.map(\.id))
        let started = copier.output == nil ? nil : store.log.active
        try store.log.roll(floor: store.log.segments.keys.filter { !drainedIDs.contains($0) }.min())
        if let started, started.recordBytes == 0, started !== store.log.active {
            store.log.segments[started.id] = nil
            started.remove()
        }
        store.compactionCycle.drainedSinceDirectory = true
        if store.withIndex({ $0.count }) <= store.thresholds.stepDirectoryMaximum {
            try? store.writeDirectory(thenLoad: true, durable: false) // housekeeping: without it, the order is this process's alone
        }
        for segment in drained {
            store.log.segments[segment.id] = nil
            store.log.retire(segment)
            store.compactionCycle.drained += 1
            if store.compactionCycle.resume?.segment == segment.id { store.compactionCycle.resume = nil }
        }
        store.log.publishStructure() // readers in other processes open the store anew, without them
    }

    /// Where the first record of segment `id` that an entry points at starts (`size` if none): every
    /// record before it is dead. One pass over the index (no key decoded), made when this process comes to
    /// a segment without knowing where a step stopped in it (another process's steps, a new launch), so
    /// that each call makes progress whoever made the steps before.
    private func firstLiveOffset(in id: UInt32, size: Int) -> Int {
        var first = size
        store.withIndex { index in
            index.forEachValue { record in
                if record.segment == id, let offset = FileNumber.int(record.offset) { first = min(first, offset) }
            }
        }
        return first
    }

    /// The records of `segment` from `start` on, read in a window of about `count` bytes (the rest of
    /// the segment if less; more if the first record is longer), and where the records read end: a step
    /// that copies them all goes on from there.
    private func records(of segment: SegmentFile, from start: Int, size: Int, count: Int) throws
        -> (bytes: [UInt8], records: [(record: SegmentRecord, offset: Int, length: Int)], next: Int) {
        var length = min(count, size - start)
        while true {
            let bytes = try FileIO.read(segment.fd, at: start, count: length, path: segment.path)
            guard bytes.count == length else {
                throw StorageError.corrupted("segment \(SegmentFile.name(of: segment.id)) is shorter than it was")
            }
            var records: [(record: SegmentRecord, offset: Int, length: Int)] = []
            if start + length == size {
                // To its end: damage is skipped, as replay skips it.
                _ = bytes.withUnsafeBytes { raw in
                    SegmentFormat.scan(raw, salt: segment.salt, from: 0) { records.append(($0, start + $1, $2)) }
                }
                return (bytes, records, size)
            }
            // A window: the records up to the first that does not verify (the window's end cuts the last one).
            var next = 0
            bytes.withUnsafeBytes { raw in
                while let (record, recordLength) = SegmentFormat.record(in: raw, at: next, salt: segment.salt) {
                    records.append((record, start + next, recordLength))
                    next += recordLength
                }
            }
            if !records.isEmpty { return (bytes, records, start + next) }
            // A record longer than the window, or damage: a larger window, up to the segment's end.
            length = min(size - start, length * 2 + SegmentFormat.recordHeaderLength)
        }
    }

    /// Copies of live records, encoded for a step's output (created with the first copy).
    private struct Copier {
        package var output: SegmentFile?
        package var buffer: [UInt8] = []
        package var moved: [(key: String, from: DiskRecord, to: DiskRecord)] = []

        package mutating func copy(_ key: String, _ record: DiskRecord, inline: UnsafeRawBufferPointer, log: SegmentLog) throws {
            let output = try self.output ?? log.createCompactionOutput()
            self.output = output
            let length = SegmentFormat.appendSet(key: key, expiry: record.expiry, time: record.lastAccess, value: record.value,
                                                 inlineBytes: inline, salt: output.salt, to: &buffer).length
            let offset = output.length + buffer.count - length
            guard SegmentOffsets.fits(output.length, appending: buffer.count - length, length) else {
                throw StorageError.corrupted("a compaction output would exceed 4 GiB")
            }
            var copy = record
            (copy.segment, copy.offset, copy.length) = (output.id, UInt32(offset), UInt32(length))
            moved.append((key, record, copy))
        }

        /// Takes the last copy back out (the buffer was `count` bytes long before it).
        mutating func undoLast(to count: Int) {
            buffer.removeSubrange(count...)
            moved.removeLast()
        }
    }
}
