import Foundation

/// Reads that do not take the store's queue: readers on any number of threads proceed together and
/// never wait behind a writer's system call (Docs/Architecture.md, "Reads off the queue").
extension DiskStore {
    /// What a read off the queue found.
    enum OffQueueRead {
        /// The verified value of `record`, found in the index of `generation` (``indexGeneration``);
        /// `flushDue`: the reads noted as use should be written now.
        case found(Data, DiskRecord, generation: UInt64, flushDue: Bool)
        /// The index has no such key.
        case missing
        /// Something was not as expected (a segment replaced meanwhile, a record that does not
        /// verify, a value file gone, the index being rebuilt): the read is made again on the queue,
        /// which tells damage from a change under way and reports or repairs it.
        case unsure
    }

    /// Reads `key` without the queue, counting the read as use.
    ///
    /// Linearizable with the operations on the queue: a write appends its record (`pwrite` returned)
    /// before it sets the index under the index's lock, and the index is read here under that lock,
    /// so the record found is complete and is the latest write that returned. Records are never
    /// changed once written; a segment that a compaction or a `removeAll` retires is unlinked but
    /// its descriptor stays open as long as a ``SegmentFile`` holds it (the reads' table of segments
    /// does while a read holds its stripe: ``SegmentTable``), so the bytes read are the ones the index named. Every read is verified (checksum and key).
    /// Only for stores nobody else changes, and readers caught up with the writer (``ProcessSharing/readsOffQueue``).
    func readOffQueue(_ key: String, now: Date) -> OffQueueRead {
        let time = StoredTime.seconds(now)
        // The memory layer's hits since the disk last took them were made before this read: they count
        // first, in the same hold of the index's lock, so that a trim never takes them for the later use.
        let hits = writes ? client?.takeMemoryHits() ?? [] : []
        // While the store opens its folder anew the index is rebuilt record by record: neither a key
        // missing yet nor a value a later record supersedes is an answer (the queue's read waits).
        let (generation, found, used) = withIndex { index -> (UInt64, DiskRecord?, [DiskRecord]) in
            let generation = indexGeneration.value
            guard generation & 1 == 0 else { return (generation, nil, []) }
            let used = hits.compactMap { index.touch($0, time: time) }
            let found = index.touch(key, time: time)
            // A page of the key directory that failed its check answers nothing: the queue drops the directory.
            return (index.baseFailed ? 1 : generation, found, used)
        }
        if !used.isEmpty { log.noteOffQueue(used, time: time) }
        guard generation & 1 == 0 else { return .unsure }
        guard let record = found else { return .missing }
        guard let (data, flushDue) = log.loadOffQueue(key, record, time: time) else { return .unsure }
        return .found(data, record, generation: generation, flushDue: flushDue)
    }
}
