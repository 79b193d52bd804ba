import Foundation

/// Applies replayed records to the index. Access records name the set record they refer to by its
/// position and its key's hash: the key directory's base finds it by the hash; the entries written
/// since (and every entry, for access records without a hash) through a map of positions to keys,
/// built only once one is needed.
package struct Replayer {
    private var keysByPosition: [UInt64: String]?
    /// A batch being read: its records are applied only once every one of them has been read, back to
    /// back, so that a batch a crash cut short (or damage) is applied not at all.
    private var batch: OpenBatch?
    /// Records before this offset belong to a batch that was broken off (damage in it): dropped too.
    private var droppedBefore = 0

    private struct OpenBatch {
        package var start: Int
        /// Where its next record must start, and where its records end.
        package var next: Int
        package var end: Int
        package var count: Int
        package var records: [(record: SegmentRecord, offset: Int, length: Int)] = []
    }
    /// The segment of the last `clear` record replayed: every segment before it is dead.
    package private(set) var lastClearSegment: UInt32?

    private static func position(_ segment: UInt32, _ offset: UInt32) -> UInt64 {
        UInt64(segment) << 32 | UInt64(offset)
    }

    /// Applies `record` (at `offset` of `segment`, `length` bytes long), or holds it while a batch is
    /// being read. A batch is dropped, not applied, when a record other than its next one comes first.
    /// - Parameter isCopy: Whether `segment` is a compaction's output: its set records are copies.
    mutating func visit(_ record: SegmentRecord, segment: UInt32, offset: Int, length: Int, isCopy: Bool = false,
                        store: DiskStore, index: inout KeyDirectory) {
        if offset < droppedBefore { return }
        if var open = batch {
            batch = nil
            if offset == open.next, offset + length <= open.end, record.isBatch == false {
                open.records.append((record, offset, length))
                open.next = offset + length
                guard open.records.count == open.count else {
                    batch = open
                    return
                }
                if open.next == open.end {
                    for held in open.records {
                        apply(held.record, segment: segment, offset: held.offset, length: held.length, isCopy: isCopy, store: store,
                              index: &index)
                    }
                } else {
                    store.recoveryIssues.append(.corrupted("a batch at byte \(open.start) of segment \(SegmentFile.name(of: segment)) did not add up; none of it was applied"))
                }
                return
            }
            store.recoveryIssues.append(.corrupted("a batch at bytes \(open.start)..<\(open.end) of segment \(SegmentFile.name(of: segment)) was damaged; none of it was applied"))
            droppedBefore = open.end
            if offset < droppedBefore { return }
        }
        if case .batch(let count, let bytes) = record {
            if count > 0 { batch = OpenBatch(start: offset, next: offset + length, end: offset + length + bytes, count: count) }
            return
        }
        apply(record, segment: segment, offset: offset, length: length, isCopy: isCopy, store: store, index: &index)
    }

    /// Ends a segment; returns the byte range of a batch still being read there (cut short: dropped).
    mutating func endSegment() -> Range<Int>? {
        defer { (batch, droppedBefore) = (nil, 0) }
        return batch.map { $0.start..<$0.next }
    }

    private mutating func apply(_ record: SegmentRecord, segment: UInt32, offset: Int, length: Int, isCopy: Bool, store: DiskStore,
                                index: inout KeyDirectory) {
        switch record {
        case .set(let key, let info):
            let new = DiskRecord(segment: segment, offset: UInt32(truncatingIfNeeded: offset), length: UInt32(length),
                                 value: info.value, expiry: info.expiry, lastAccess: info.time, keyHash: index.hash(key))
            // A copy replays over the record it copied (the key's last before it), where that one is
            // still known (its segment not deleted yet, or the key directory's entry): the entry moves
            // and keeps its place in the order of use. As a set, it would count as the most recent use.
            // It carries the entry's last use: where that differs from the one replayed, uses went
            // unrecorded (a compaction drops the access records naming its inputs), and the copy counts
            // as the use it carries, as any set does.
            if isCopy, let old = index.peek(key), old.value == new.value, old.expiry == new.expiry, old.lastAccess == new.lastAccess,
               index.update(key, { ($0.segment, $0.offset, $0.length) = (new.segment, new.offset, new.length) }) {
                keysByPosition?[Self.position(old.segment, old.offset)] = nil
                keysByPosition?[Self.position(new.segment, new.offset)] = key
                return
            }
            if let old = index.set(key, new) {
                store.totalSize -= old.size
                keysByPosition?[Self.position(old.segment, old.offset)] = nil
            }
            store.totalSize += new.size
            keysByPosition?[Self.position(new.segment, new.offset)] = key
        case .remove(let key):
            if let old = index.remove(key) {
                store.totalSize -= old.size
                keysByPosition?[Self.position(old.segment, old.offset)] = nil
            }
        case .clear:
            index.removeAll()
            store.totalSize = 0
            keysByPosition = keysByPosition == nil ? nil : [:]
            lastClearSegment = segment
        case .access(let target, let targetOffset, let time, let keyHash):
            store.accessesSinceDirectory += 1
            if let keyHash, index.touchBase(hash: keyHash, segment: target, offset: targetOffset, time: time) { return }
            if keysByPosition == nil {
                // Entries written since the base; all of them where records carry no hash (before format 4).
                let entries = keyHash == nil ? index.entries : index.overlayEntries
                var map: [UInt64: String] = [:]
                map.reserveCapacity(entries.count)
                for (key, record) in entries { map[Self.position(record.segment, record.offset)] = key }
                keysByPosition = map
            }
            // The key found at that position, if the record names its hash, must have it: an access record
            // written for a store whose folder was since made anew may name a place another key now has.
            if let key = keysByPosition?[Self.position(target, targetOffset)], keyHash.map({ index.hash(key) == $0 }) ?? true {
                _ = index.touch(key, time: time)
            }
        case .batch:
            break // handled by visit
        }
    }
}

extension SegmentRecord {
    var isBatch: Bool {
        if case .batch = self { return true }
        return false
    }
}
