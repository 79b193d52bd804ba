import Foundation

/// Reads that do not take the store's queue: readers on any number of threads proceed together and
/// never wait behind a writer's system call (Docs/Architecture.md, "Reads off the queue").
extension DiskStore {
    /// What a read off the queue found.
    enum OffQueueRead {
        /// The verified value of `record`, found in the index of `generation` (``indexGeneration``).
        case found(Data, DiskRecord, generation: UInt64)
        /// The index has no such key.
        case missing
        /// Something was not as expected (a segment replaced meanwhile, a record that does not
        /// verify, a value file gone, the index being rebuilt): the read is made again on the queue,
        /// which tells damage from a change under way and reports or repairs it. `memoryHits`: the
        /// memory layer's hits this read took and could not count, which the queue counts first.
        case unsure(memoryHits: [String])
    }

    /// Reads `key` without the queue, counting the read as use; `flushDue`: the uses noted off the queue
    /// should be written now (whatever the read found: the memory hits it took count too).
    ///
    /// Linearizable with the operations on the queue: a write appends its record (`pwrite` returned)
    /// before it sets the index under the index's lock, and the index is read here under that lock,
    /// so the record found is complete and is the latest write that returned. Records are never
    /// changed once written; a segment that a compaction or a `removeAll` retires is unlinked but
    /// its descriptor stays open as long as a ``SegmentFile`` holds it (the reads' table of segments
    /// does while a read holds its stripe: ``SegmentTable``), so the bytes read are the ones the index named. Every read is verified (checksum and key).
    /// Only for stores nobody else changes, and readers caught up with the writer (``ProcessSharing/readsOffQueue``).
    func readOffQueue(_ key: String, now: Date) -> (read: OffQueueRead, flushDue: Bool) {
        let time = StoredTime.seconds(now)
        // The memory layer's hits since the disk last took them were made before this read: they count
        // first, in the same hold of the index's lock, so that a trim never takes them for the later use.
        let hits = writes ? client?.takeMemoryHits() ?? [] : []
        // While the store opens its folder anew the index is rebuilt record by record: neither a key
        // missing yet nor a value a later record supersedes is an answer (the queue's read waits).
        let (generation, found, used) = withIndex { index -> (UInt64, (record: DiskRecord, recency: UInt64)?, [SegmentLog.Access]?) in
            let generation = indexGeneration.value
            guard generation & 1 == 0 else { return (generation, nil, nil) }
            let used = index.markHitsUsed(hits, time: time).map { SegmentLog.Access($0.record, time: time, recency: $0.recency) }
            let found = index.markUsedByHash(key, time: time) // the record's key is checked as it is read
            // A page of the key directory that failed its check answers nothing: the queue drops the directory.
            return (index.baseFailed ? 1 : generation, found, used)
        }
        // An index being rebuilt marks nothing used (`used` nil): the hits go to the queue, which counts them before its read.
        guard let used else { return (.unsure(memoryHits: hits), false) }
        let hitsFlushDue = log.noteOffQueue(used)
        guard generation & 1 == 0 else { return (.unsure(memoryHits: []), hitsFlushDue) }
        guard let (record, recency) = found else { return (.missing, hitsFlushDue) }
        let (data, flushDue) = log.loadOffQueue(key, record, use: SegmentLog.Access(record, time: time, recency: recency))
        guard let data else { return (.unsure(memoryHits: []), flushDue || hitsFlushDue) }
        return (.found(data, record, generation: generation), flushDue || hitsFlushDue)
    }
}
