import Foundation

/// A compaction's copy: the live records of its input segments written into new ones, off the queue.
/// It touches no state of the store (the store plans it and takes its result back on its queue:
/// ``Compaction/begin(liveBytes:)``, ``Compaction/finish(_:victims:epoch:)``), and
/// copies of one folder never run at the same time (``copyAlone(in:_:)``).
enum CompactionCopy {
    /// What a compaction produced off the queue, handed back to the store's queue.
    struct Result: @unchecked Sendable {
        // @unchecked Sendable: built on one thread, then handed over once and only read on the queue.
        var outputs: [SegmentFile] = []
        /// Each copied record: where it was, where its copy is.
        var moved: [(from: DiskRecord, to: DiskRecord)] = []
        /// Entries whose records did not verify: their values are damaged.
        var damaged: [KeyDirectory.LiveRecord] = []
        var failure: (any Error)?
    }

    /// What a compaction copies, from where, and into which ids.
    struct Plan: @unchecked Sendable {
        // @unchecked Sendable: built on the queue, then only read by the compaction thread.
        /// Every live entry, in no order (``KeyDirectory/recordsForCompaction()``).
        var records: [KeyDirectory.LiveRecord]
        /// The index's key hash seed: a record copied is of the entry's key if its key has the entry's hash.
        var seed: UInt64
        var victims: [SegmentFile]
        var firstOutput: UInt32
        var outputCount: UInt32
    }

    /// One lock per store folder, held while a compaction copies: a compaction on demand
    /// (``DiskStore/compactNow()``) waits for the copy of a background one under way, and a store opened
    /// again on the folder for the copy its predecessor left running. Never held across the queue.
    /// Keyed by what identifies the folder (its device and inode, as the engine registry does), so two
    /// paths to one folder (a symlink, `..`) share one lock; an entry lives only while a compaction
    /// uses it, so the table does not grow with every folder ever compacted.
    private static let copyLocks = Locked<[CopyLockKey: (lock: NSLock, users: Int)]>([:])

    /// What a copy lock is for: the folder's identity, or its path when the open folder can no longer
    /// be asked (`fstat` failed), which then serialises only with copies in that path.
    private enum CopyLockKey: Hashable {
        case folder(FolderIdentity)
        case path(String)
    }

    /// Runs `copy` while no other compaction of the folder `folder` copies.
    static func copyAlone<Result>(in folder: FolderHandle, _ copy: () -> Result) -> Result {
        let key = folder.identity.map(CopyLockKey.folder) ?? .path(folder.path)
        let lock = copyLocks.withLock { locks in
            var entry = locks[key] ?? (NSLock(), 0)
            entry.users += 1
            locks[key] = entry
            return entry.lock
        }
        defer {
            copyLocks.withLock { locks in
                guard var entry = locks[key] else { return }
                entry.users -= 1
                locks[key] = entry.users == 0 ? nil : entry
            }
        }
        lock.lock()
        defer { lock.unlock() }
        return copy()
    }

    /// The copy lock of `folder` while one exists (tests: two paths to one folder share it).
    static func copyLock(of folder: FolderHandle) -> NSLock? {
        let key = folder.identity.map(CopyLockKey.folder) ?? .path(folder.path)
        return copyLocks.withLock { $0[key]?.lock }
    }

    /// Copies `records` out of `victims` into new segments `first`, `first + 1`, …, least recently used
    /// first, flushed. Each copy carries the key its original holds, whose hash (with `seed`, the
    /// index's) must be the entry's: the key is read here, off the queue, not from the index.
    /// Runs off the queue: it touches no state of the store.
    static func compact(_ records: [KeyDirectory.LiveRecord], seed: UInt64, victims: [SegmentFile],
                        into first: UInt32, count: UInt32, folder: FolderHandle, store: UInt64,
                        segmentLimit: Int = DiskStore.Thresholds.standard.segmentLimit) -> Result {
        var result = Result()
        let byID = Dictionary(uniqueKeysWithValues: victims.map { ($0.id, $0) })
        do {
            var output = try SegmentFile.create(id: first, in: folder, store: store, flags: SegmentFormat.compactionFlag,
                                                durable: false, unpublished: true)
            result.outputs.append(output)
            var buffer: [UInt8] = []
            for live in records.sorted(by: { $0.recency < $1.recency }) {
                guard let segment = byID[live.segment],
                      let recordOffset = FileNumber.int(live.offset), let recordLength = FileNumber.int(live.length),
                      let (parsed, bytes) = try? segment.record(at: recordOffset, length: recordLength),
                      case .set(let key, let info) = parsed, KeyHash.of(key, seed: seed) == live.keyHash else {
                    result.damaged.append(live)
                    continue
                }
                let record = live.record(value: info.value)
                if SegmentOffsets.end(output.length, appending: buffer.count, bytes.count) > segmentLimit, output.id + 1 < first + count, !buffer.isEmpty || output.recordBytes > 0 {
                    try output.append(buffer)
                    buffer.removeAll(keepingCapacity: true)
                    output = try SegmentFile.create(id: output.id + 1, in: folder, store: store,
                                                    flags: SegmentFormat.compactionFlag, durable: false, unpublished: true)
                    result.outputs.append(output)
                }
                // Offsets are 32-bit: an output that would pass 4 GiB (more live data than the ids
                // reserved for it can hold) ends the compaction, which is retried later.
                guard SegmentOffsets.fits(output.length, appending: buffer.count, bytes.count) else {
                    throw StorageError.corrupted("the compaction output would exceed 4 GiB")
                }
                let length = bytes.withUnsafeBytes { raw in
                    SegmentFormat.appendSet(key: key, expiry: record.expiry, time: record.lastAccess, value: record.value,
                                            inlineBytes: UnsafeRawBufferPointer(rebasing: raw[info.valueOffset...]),
                                            salt: output.salt, to: &buffer).length
                }
                var copy = record
                copy.segment = output.id
                copy.offset = UInt32(SegmentOffsets.end(output.length, appending: buffer.count - length))
                copy.length = UInt32(length)
                result.moved.append((record, copy))
                if buffer.count >= 1 << 20 {
                    try output.append(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try output.append(buffer)
            for file in result.outputs { try file.sync() }
        } catch {
            result.failure = error
        }
        return result
    }
}
