import Foundation

/// What reads made off the store's queue share with it (``DiskStore/readOffQueue(_:now:)``): the
/// segments they may read, and the access records they leave for the queue's next append.
///
/// One of several stripes (``SegmentLog/offQueue``), each behind a lock of its own on a cache line of
/// its own; a thread uses the stripe its identity picks. Readers on different threads then write to
/// different memory: with one table, every read appended to the same array under the same lock, and
/// two reading threads spent their time passing that cache line back and forth.
struct OffQueueReads {
    /// Every segment of the store, as the queue last set them (``SegmentLog/segments``).
    var segments = SegmentTable()
    /// Reads to be recorded as access records, as ``SegmentLog/pendingAccesses`` are.
    var accesses: [SegmentLog.Access] = []
    /// Whether the queue was asked to write `accesses` and has not taken them yet.
    var flushRequested = false

    static let stripeCount = 8

    /// The stripe of the calling thread: threads are numbered as they first ask (``ThreadNumber``),
    /// so the first eight reading threads each have a stripe of their own.
    @inline(__always)
    static func stripeOfCallingThread() -> Int {
        ThreadNumber.current & (stripeCount - 1)
    }
}

/// Segments by id for reads off the queue: ids in order, found by binary search (a store has a
/// handful of segments, and hashing the id for a dictionary cost more than the search).
///
/// A read takes a segment's descriptor, salt and mapping from here, never the ``SegmentFile`` itself:
/// taking the object retains it, and every reading thread would write its reference count. The table
/// keeps the files, and so their descriptors and mappings, open; a reader reads holding its stripe's
/// lock, which the queue needs to replace the table (``SegmentLog/loadOffQueue(_:_:use:)``).
struct SegmentTable {
    /// What a read needs of a segment: its descriptor and salt, and its mapping's bytes (nil base: none).
    typealias Handle = (fd: Int32, salt: UInt64, mapped: UnsafeRawPointer?, mappedLength: Int)

    private var ids: [UInt32] = []
    private var handles: [Handle] = []
    /// What keeps the descriptors open.
    private var files: [SegmentFile] = []

    init() {}

    init(_ segments: [UInt32: SegmentFile]) {
        for (id, file) in segments.sorted(by: { $0.key < $1.key }) {
            ids.append(id)
            handles.append((file.fd, file.salt, file.mapping?.base, file.mapping?.length ?? 0))
            files.append(file)
        }
    }

    /// What a read needs of segment `id`; nil if the table has no such segment.
    func handle(of id: UInt32) -> Handle? {
        var (low, high) = (0, ids.count)
        while low < high {
            let middle = (low + high) / 2
            if ids[middle] < id { low = middle + 1 } else { high = middle }
        }
        return low < ids.count && ids[low] == id ? handles[low] : nil
    }
}

extension SegmentLog {
    /// A read (or a memory hit) to be recorded: the record used, when, its key's hash, and the recency
    /// the use gave the entry in the index (``KeyDirectory/markUsed(_:time:)``). Reads on the queue and
    /// off it (in stripes) note their uses in different places, each in its own order; the recency puts
    /// them together in the order the index holds, which a replay of the records must give
    /// (``SegmentLog/append(durable:length:_:)``).
    struct Access {
        var segment: UInt32
        var offset: UInt32
        var time: Double
        var keyHash: UInt64
        var recency: UInt64

        init(_ record: DiskRecord, time: Double, recency: UInt64) {
            (segment, offset, keyHash) = (record.segment, record.offset, record.keyHash)
            (self.time, self.recency) = (time, recency)
        }
    }

    /// How many reads off the queue may wait in one stripe before one of them asks the queue to write them.
    static let offQueueAccessLimit = 256

    /// Reads the bytes of `record` into `bytes` for a read off the queue, holding the calling
    /// thread's stripe (so its table keeps the segment's descriptor open), after noting the read as
    /// use; returns how many bytes were read, the segment's salt, and whether the queue should now
    /// write the reads noted (the caller asks it: ``DiskEngine/read(_:now:)``). Nil when the table no
    /// longer (or not yet) has the segment, a compaction or a `removeAll` under way, or the `pread`
    /// failed: the queue's read then tells which.
    private func readRecordOffQueue(_ record: DiskRecord, at offset: Int, use: Access,
                                    into bytes: UnsafeMutableRawBufferPointer) -> (count: Int, salt: UInt64, flushDue: Bool)? {
        offQueue[OffQueueReads.stripeOfCallingThread()].withLock { state in
            guard let handle = state.segments.handle(of: record.segment) else { return nil }
            let salt = handle.salt
            let count: Int
            if let mapped = handle.mapped, SegmentMapping.copy(from: mapped, length: handle.mappedLength, at: offset, into: bytes) {
                count = bytes.count // no system call: the mapping had the record
            } else if let read = try? FileIO.read(handle.fd, at: offset, into: bytes, path: "") {
                count = read
            } else {
                return nil
            }
            return (count, salt, note(CollectionOfOne(use), in: &state))
        }
    }

    /// Notes `uses` (memory hits a read off the queue took) in the calling thread's stripe, to be
    /// written as access records as the reads' are; returns whether the queue should now write them.
    func noteOffQueue(_ uses: [Access]) -> Bool {
        offQueue[OffQueueReads.stripeOfCallingThread()].withLock { note(uses, in: &$0) }
    }

    /// Adds `uses` to a stripe's, held; returns whether this is the one that asks the queue to write them.
    private func note(_ uses: some Collection<Access>, in state: inout OffQueueReads) -> Bool {
        guard writes, !uses.isEmpty else { return false }
        state.accesses.append(contentsOf: uses)
        // Set only when clear, so that reads leave the flag's cache line shared. Read after the
        // stripe's lock was taken: if the queue cleared it before taking this stripe, this read
        // sees it cleared (the lock orders them) and sets it, so no access waits unseen.
        if offQueueHasAccesses.value == 0 { offQueueHasAccesses.store(1) }
        guard state.accesses.count >= Self.offQueueAccessLimit, !state.flushRequested else { return false }
        state.flushRequested = true
        return true
    }

    /// Moves the reads noted off the queue into ``pendingAccesses``. On the queue.
    func takeOffQueueAccesses() {
        guard offQueueHasAccesses.value != 0 else { return }
        // Cleared before the stripes are taken: a read noted after its stripe was taken sets it again.
        offQueueHasAccesses.store(0)
        for stripe in offQueue {
            let taken = stripe.withLock { state in
                defer {
                    state.accesses.removeAll(keepingCapacity: true)
                    state.flushRequested = false
                }
                return state.accesses
            }
            pendingAccesses += taken
            accessesSinceDirectory += taken.count
        }
    }

    /// Forgets the access records not written yet, those reads off the queue noted too (their
    /// records are gone: a `removeAll`, or the store opening its files anew).
    func dropPendingAccesses() {
        takeOffQueueAccesses()
        pendingAccesses.removeAll()
    }

    /// The value bytes `record` names, read off the queue and verified as ``load(_:_:in:)`` verifies
    /// them, after noting the read as use; also whether the queue should now write the reads noted
    /// (whether or not the bytes were found). No data when anything is not as expected (the segment gone
    /// from the table, a short read, a record that does not verify, a value file gone): the caller then
    /// reads on the queue, which tells a change under way from damage. Never touches the queue's state:
    /// the record is read into a buffer of its own.
    func loadOffQueue(_ key: String, _ record: DiskRecord, use: Access) -> (data: Data?, flushDue: Bool) {
        guard let length = FileNumber.int(record.length), let offset = FileNumber.int(record.offset) else { return (nil, false) }
        return withUnsafeTemporaryAllocation(byteCount: length, alignment: 8) { bytes -> (data: Data?, flushDue: Bool) in
            guard let (count, salt, flushDue) = readRecordOffQueue(record, at: offset, use: use, into: bytes) else { return (nil, false) }
            guard count == length, let (keyRange, info) = SegmentFormat.setRecord(UnsafeRawBufferPointer(bytes), salt: salt),
                  info.value == record.value,
                  Self.isSameKey(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[keyRange]), key) else { return (nil, flushDue) }
            switch record.value {
            case .inline:
                return (Data(UnsafeRawBufferPointer(rebasing: bytes[info.valueOffset...])), flushDue)
            case .file(let id, let size, let hash):
                return (try? values.read(id, size: size, hash: hash), flushDue)
            }
        }
    }
}
