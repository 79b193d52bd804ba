import Foundation

/// What reads made off the store's queue share with it (``DiskStore/readOffQueue(_:now:)``): the
/// segments they may read, and the access records they leave for the queue's next append.
struct OffQueueReads {
    /// Every segment of the store by id, as the queue last set them (``SegmentLog/segments``).
    var segments: [UInt32: SegmentFile] = [:]
    /// Reads to be recorded as access records, as ``SegmentLog/pendingAccesses`` are.
    var accesses: [SegmentLog.Access] = []
    /// Whether the queue was asked to write `accesses` and has not taken them yet.
    var flushRequested = false
}

extension SegmentLog {
    /// A read (or a memory hit) to be recorded: the record used, when, and its key's hash.
    typealias Access = (segment: UInt32, offset: UInt32, time: Double, keyHash: UInt64)

    /// How many reads off the queue may wait before one of them asks the queue to write them.
    static let offQueueAccessLimit = 256

    /// The segment holding `record`, for a read off the queue, after noting the read as use; also
    /// whether the queue should now write the reads noted (the caller asks it: ``DiskEngine/read(_:now:)``).
    /// Nil when the table no longer (or not yet) has the segment: a compaction or a `removeAll`
    /// under way, which the queue's read waits for.
    func segmentForOffQueueRead(_ record: DiskRecord, time: Double) -> (segment: SegmentFile, flushDue: Bool)? {
        offQueue.withLock { state in
            guard let segment = state.segments[record.segment] else { return nil }
            guard writes else { return (segment, false) }
            state.accesses.append((record.segment, record.offset, time, record.keyHash))
            offQueueHasAccesses.store(1)
            guard state.accesses.count >= Self.offQueueAccessLimit, !state.flushRequested else { return (segment, false) }
            state.flushRequested = true
            return (segment, true)
        }
    }

    /// Moves the reads noted off the queue into ``pendingAccesses``. On the queue.
    func takeOffQueueAccesses() {
        guard offQueueHasAccesses.value != 0 else { return }
        let taken = offQueue.withLock { state in
            defer {
                state.accesses.removeAll(keepingCapacity: true)
                state.flushRequested = false
                offQueueHasAccesses.store(0)
            }
            return state.accesses
        }
        pendingAccesses += taken
        accessesSinceDirectory += taken.count
    }

    /// Forgets the access records not written yet, those reads off the queue noted too (their
    /// records are gone: a `removeAll`, or the store opening its files anew).
    func dropPendingAccesses() {
        takeOffQueueAccesses()
        pendingAccesses.removeAll()
    }

    /// The value bytes `record` names, read from `segment` off the queue and verified as ``load(_:_:)``
    /// verifies them; nil when anything is not as expected (a short read, a record that does not
    /// verify, a value file gone): the caller then reads on the queue, which tells a change under
    /// way from damage. Never touches the queue's state: the record is read into a buffer of its own.
    func loadOffQueue(_ key: String, _ record: DiskRecord, from segment: SegmentFile) -> Data? {
        guard let length = FileNumber.int(record.length), let offset = FileNumber.int(record.offset) else { return nil }
        return withUnsafeTemporaryAllocation(byteCount: length, alignment: 8) { bytes -> Data? in
            guard let (storedKey, info) = try? segment.setRecord(at: offset, into: bytes),
                  info.value == record.value, Self.isSameKey(storedKey, key) else { return nil }
            switch record.value {
            case .inline:
                return Data(UnsafeRawBufferPointer(rebasing: bytes[info.valueOffset...]))
            case .file(let id, let size, let hash):
                return try? values.read(id, size: size, hash: hash)
            }
        }
    }
}
