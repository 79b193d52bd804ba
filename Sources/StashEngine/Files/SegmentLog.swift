import Foundation

/// The store's files: its folder, the segments records are appended to (the active one, the highest,
/// takes the appends; Docs/Format.md, "Segments"), the value files, and the access records that go out
/// with the next append. It knows which records are where, not what they mean: the index
/// (``KeyDirectory``) says which record holds a key's value, the store (``DiskStore``) decides what
/// is written.
///
/// Lives on its store's queue, as the store does, and is never shared.
package final class SegmentLog {
    // `@exclusivity(unchecked)` on what every write touches, on the queue only: see `DiskStore`.
    /// The store's path.
    package let directory: String
    /// The folder: replaced when the store opens its path anew after the folder was removed (``DiskStore/reopen()``).
    var folder: StoreFolder
    package let values: ValueFiles
    /// Whether records are appended (not a reader).
    let writes: Bool
    /// Whether appends are durable (``DiskConfig/durable``): a new segment's name is then flushed with
    /// the folder before a durable record in it counts as written.
    let durable: Bool
    /// Segments are sealed at this size; a new one is started for the next record.
    let segmentLimit: Int
    let groupCommit = GroupCommit()
    /// Whether opening met a segment it could not read (not a regular file, or a damaged header): the
    /// value files no record names are then kept, since its records may name them.
    var hasUnreadSegments = false
    /// Segments numbered below this are superseded (the header's `floor`); new segments carry it.
    var floor: UInt32 = 0
    /// Every segment of the store by id; the active one is the highest. Reads off the queue see
    /// the table as it was last set (``offQueue``). Read by every write (``byteCounts``): unchecked,
    /// as ``SegmentFile/length``.
    @exclusivity(unchecked) var segments: [UInt32: SegmentFile] = [:] {
        didSet {
            mapSegments()
            let table = SegmentTable(segments)
            for stripe in offQueue { stripe.withLock { $0.segments = table } }
        }
    }
    /// Whether segments are read from mappings (``SegmentMapping``), not with `pread` alone: not for
    /// files the system may make unreadable while the device is locked (Apple's stricter data
    /// protection classes), where a read must fail with an error a `pread` gives.
    let mapsSegments: Bool
    /// Whether the active segment is appended to through a mapping (``SegmentWriteWindow``): only by a
    /// writer that keeps the folder to itself. Writers in several processes each learn where the
    /// segment ends from its length, which the room a mapping reserves would make wrong.
    let mapsAppends: Bool
    /// What reads made off the queue share with it: the segments, the access records they leave;
    /// in stripes, one per group of threads (``OffQueueReads``).
    let offQueue = (0..<OffQueueReads.stripeCount).map { _ in Locked(OffQueueReads(), order: .offQueueReads) }
    /// Nonzero while ``offQueue`` holds access records: the queue's appends take the lock only then.
    let offQueueHasAccesses = AtomicWord()
    /// Where records are appended; nil for a reader.
    @exclusivity(unchecked) var active: SegmentFile?
    var nextSegmentID: UInt32 = 1
    /// Reads (and memory hits) to be recorded as access records with the next append.
    @exclusivity(unchecked) var pendingAccesses: [Access] = []
    /// Access records written or pending since the key directory was (``DiskStore/accessesSinceDirectory``).
    @exclusivity(unchecked) var accessesSinceDirectory = 0
    /// How many appends of records (copies into the mapping or `pwrite`s) the store has made; for tests.
    @exclusivity(unchecked) var appendCount = 0
    /// Whether the last write found the disk full (a record's append or a value file's write failed
    /// with `ENOSPC` or `EDQUOT`): a `removeAll` then deletes the old files before it returns, so that
    /// the space is free at once (``WritePath/removeAll()``). Sealing a segment frees the room
    /// reserved past its records, so the new segment a `removeAll` starts may fit on a full disk.
    @exclusivity(unchecked) var foundDiskFull = false
    /// When a write checks that the folder is still there (``DiskStore/ensureActive(checkingNow:)``).
    @exclusivity(unchecked) var folderLoss = FolderLossCheck()
    /// Reused for every append, so a write allocates no buffer of its own: its `count` is the room it
    /// has (it only grows, up to 1 MiB), not the bytes of the last append.
    @exclusivity(unchecked) private var scratch: [UInt8] = []
    /// Reused for every read of a record (``load(_:_:in:)``), as ``scratch`` is for appends.
    @exclusivity(unchecked) private var readScratch: [UInt8] = []

    init(directory: String, folder: StoreFolder, randomFileIDs: Bool, writes: Bool, durable: Bool, segmentLimit: Int,
         mapsSegments: Bool = true, mapsAppends: Bool = false) {
        self.directory = directory
        self.mapsSegments = mapsSegments
        self.mapsAppends = mapsAppends && writes
        self.folder = folder
        values = ValueFiles(folder: folder.handle, randomIDs: randomFileIDs)
        self.writes = writes
        self.durable = durable
        self.segmentLimit = segmentLimit
    }

    /// Forgets every segment before the store opens its files anew (``DiskStore/forgetIndex(seed:)``).
    func forgetSegments() {
        segments = [:]
        dropPendingAccesses()
        active = nil
        nextSegmentID = 1
        floor = 0
        hasUnreadSegments = false
    }

    /// Maps the segments not mapped yet: the highest (the one appended to, by this process or by a
    /// writer this reader follows) with room for every record it may still take, since it grows
    /// under its mapping; the others, sealed, as long as they are.
    private func mapSegments() {
        guard mapsSegments, let highest = segments.keys.max() else { return }
        for (id, file) in segments where file.mapping == nil {
            file.map(length: id == highest ? max(file.length, longestSegment) : file.length)
        }
    }

    /// The most a segment holds: it is sealed once it reaches the limit, after a record of at most the
    /// longest length.
    private var longestSegment: Int { segmentLimit + SegmentFormat.recordHeaderLength + SegmentFormat.maxBodyLength }

    /// Makes `file` the segment appended to, through a mapping where this log maps appends.
    func activate(_ file: SegmentFile) {
        active = file
        if mapsAppends { file.mapForAppends(length: max(file.length, longestSegment)) }
    }

    /// The path of the file that holds `record`'s value, if it has one of its own.
    func filePath(of record: DiskRecord) -> String? {
        record.fileID.map(values.path(of:))
    }

    // MARK: Reading

    /// The value bytes `record` names, verified (the record's checksum, its key, the file's hash).
    ///
    /// The record is read into ``readScratch`` (kept from one read to the next) and its key compared
    /// there, in place: the returned value is the read's one allocation.
    /// `table`: the segments to read from, when not the log's own (those of a store before it opened anew).
    func load(_ key: String, _ record: DiskRecord, in table: [UInt32: SegmentFile]? = nil) throws -> Data {
        guard let segment = (table ?? segments)[record.segment] else {
            throw StorageError.corrupted("the segment holding this key's record is missing")
        }
        guard let length = FileNumber.int(record.length), let offset = FileNumber.int(record.offset) else {
            throw StorageError.corrupted("the key directory gives this key's record a length or offset past this platform's Int")
        }
        if readScratch.count < length { readScratch = [UInt8](repeating: 0, count: max(length, 4096)) }
        defer { if readScratch.count > 1 << 20 { readScratch = [] } } // do not keep a large record's buffer
        return try readScratch.withUnsafeMutableBytes { scratch in
            let bytes = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length])
            let (storedKey, info) = try segment.setRecord(at: offset, into: bytes)
            guard info.value == record.value, Self.isSameKey(storedKey, key) else {
                throw StorageError.corrupted("the record at byte \(record.offset) of \(segment.path) is not this key's")
            }
            switch record.value {
            case .inline:
                return Data(UnsafeRawBufferPointer(rebasing: bytes[info.valueOffset...]))
            case .file(let id, let size, let hash):
                return try values.read(id, size: size, hash: hash)
            }
        }
    }

    /// Whether a record's key bytes are `key`. The same bytes are (the common case, decided without
    /// building a `String`); other bytes are decoded and compared as Swift strings, so that a
    /// canonically equivalent spelling is the same key (Contract item 8) and bytes that are no valid
    /// UTF-8 are no key: a byte mismatch alone never makes a false mismatch.
    static func isSameKey(_ stored: UnsafeRawBufferPointer, _ key: String) -> Bool {
        var key = key
        let sameBytes = key.withUTF8 { utf8 in
            utf8.count == stored.count && (utf8.isEmpty || memcmp(utf8.baseAddress!, stored.baseAddress!, utf8.count) == 0)
        }
        return sameBytes || SegmentFormat.key(stored).map { $0 == key } ?? false
    }

    // MARK: Appending

    /// Appends pending access records and the records `encode` stores (with the active segment's
    /// salt) into the `length` bytes it is given, in one `pwrite`; returns the segment and offset where
    /// the last record starts (`encode` returns its length), its length, and the group commit position after it.
    ///
    /// The bytes are the log's ``scratch``, kept from one append to the next: a write allocates
    /// nothing of its own and encodes each field in place (``SegmentFormat/encodeSet(key:expiry:time:value:inlineBytes:salt:into:)``).
    @discardableResult
    package func append(durable: Bool = false, length: Int, _ encode: (UnsafeMutableRawBufferPointer, UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
        takeOffQueueAccesses()
        putPendingAccessesInOrderOfUse()
        let accessBytes = pendingAccesses.count * SegmentFormat.accessLength
        let total = accessBytes + length
        if scratch.count < total { scratch = [UInt8](repeating: 0, count: max(total, 4096)) }
        let last = try scratch.withUnsafeMutableBytes { bytes in
            for (number, access) in pendingAccesses.enumerated() {
                let start = number * SegmentFormat.accessLength
                SegmentFormat.encodeAccess(segment: access.segment, offset: access.offset, time: access.time, keyHash: access.keyHash, salt: segment.salt,
                                           into: UnsafeMutableRawBufferPointer(rebasing: bytes[start..<(start + SegmentFormat.accessLength)]))
            }
            let last = encode(UnsafeMutableRawBufferPointer(rebasing: bytes[accessBytes..<total]), segment.salt)
            try noteDiskFull { try segment.append(UnsafeRawBufferPointer(rebasing: bytes[0..<total])) }
            return last
        }
        folder.shared?.publish(length: segment.length) // readers in other processes: written (copied, or `pwrite` returned)
        let offset = segment.length - last
        segment.deadBytes += accessBytes
        pendingAccesses.removeAll(keepingCapacity: true)
        appendCount += 1
        folderLoss.didAppend()
        let end = groupCommit.noteAppend(total, to: segment, durable: durable)
        if scratch.count > 1 << 20 { scratch = [] } // do not keep a large value's buffer
        if segment.length >= segmentLimit { try? roll() }
        return (segment.id, offset, last, end)
    }

    /// As ``append(durable:length:_:)``, for records that `encode` appends to an array (batches, and
    /// records whose length is not worked out beforehand).
    @discardableResult
    package func append(durable: Bool = false, _ encode: (inout [UInt8], UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
        var records: [UInt8] = []
        let last = encode(&records, segment.salt)
        return try append(durable: durable, length: records.count) { out, _ in
            records.withUnsafeBytes { out.copyMemory(from: $0) }
            return last
        }
    }

    /// Writes `data` to a value file of its own (``ValueFiles/write(_:durable:)``), noting a full disk.
    func writeValue(_ data: Data, durable: Bool) throws -> (id: UInt64, hash: UInt64) {
        try noteDiskFull { try values.write(data, durable: durable) }
    }

    /// Runs `write`, noting in ``foundDiskFull`` whether it failed for want of space.
    private func noteDiskFull<Result>(_ write: () throws -> Result) rethrows -> Result {
        do {
            let result = try write()
            foundDiskFull = false
            return result
        } catch {
            foundDiskFull = WritePath.isDiskFull(error)
            throw error
        }
    }

    /// Sorts ``pendingAccesses`` by the recency each use gave its entry, when they are not in that order
    /// already: the reads on the queue and those of each stripe off it each come in the order they were
    /// made, but together they do not, and a replay takes the records' order as the order of use.
    func putPendingAccessesInOrderOfUse() {
        guard pendingAccesses.count > 1 else { return }
        var previous = pendingAccesses[0].recency
        for access in pendingAccesses.dropFirst() {
            guard access.recency >= previous else {
                // Swift's sort is stable: uses of one entry that carry the same recency keep their order.
                return pendingAccesses.sort { $0.recency < $1.recency }
            }
            previous = access.recency
        }
    }

    /// Writes the buffered access records.
    func flushAccesses() throws {
        takeOffQueueAccesses()
        guard !pendingAccesses.isEmpty, active != nil else { return }
        try append { _, _ in 0 }
    }

    /// Seals the active segment and starts a new one (carrying `newFloor`, which then becomes the
    /// log's floor). A number a file that is not the store's already has is passed over.
    func roll(floor newFloor: UInt32? = nil) throws {
        // Sealed at the end of its records before the next exists: a crash then never leaves zeros
        // of room reserved for appends in a segment that is not the last (where they would be damage).
        active?.endAppends()
        var next: SegmentFile?
        while next == nil {
            do {
                next = try SegmentFile.create(id: nextSegmentID, in: folder.handle, store: folder.storeID, floor: newFloor ?? floor,
                                              durable: durable)
            } catch where FileIO.isErrno(error, .EEXIST) {
                nextSegmentID = try Self.segmentID(after: nextSegmentID, skipping: 1)
            }
        }
        guard let next else { return }
        if let newFloor { floor = newFloor }
        try groupCommit.switchFile(to: next)
        nextSegmentID = next.id == .max ? .max : next.id + 1 // the one after .max fails as taken, then runs out
        segments[next.id] = next
        activate(next)
        publishStructure()
    }

    /// A new segment for a compaction step's output, numbered above every other, under its unpublished name.
    func createCompactionOutput() throws -> SegmentFile {
        while true {
            do {
                let output = try SegmentFile.create(id: nextSegmentID, in: folder.handle, store: folder.storeID, floor: floor,
                                                    flags: SegmentFormat.compactionFlag, durable: false, unpublished: true)
                nextSegmentID = try Self.segmentID(after: output.id, skipping: 1)
                return output
            } catch where FileIO.isErrno(error, .EEXIST) {
                nextSegmentID = try Self.segmentID(after: nextSegmentID, skipping: 1)
            }
        }
    }

    /// Tells readers in other processes that the store's files changed (``SharedState``): they open
    /// it anew before their next operation.
    func publishStructure() {
        guard writes, let shared = folder.shared else { return }
        shared.publishStructure(store: folder.storeID, segment: active?.id ?? 0, salt: active?.salt ?? 0, length: active?.length ?? 0)
        folder.retained.removeUnneeded(in: folder.handle, shared: shared)
    }

    /// The value file `record` names, for the write that replaces or removes the record to remove: kept
    /// while a process that follows the store may still read the record, which its observers are told
    /// of with the value (``RetainedSegments``).
    func valueFile(of record: DiskRecord) -> ValueFileRef? {
        guard let id = record.fileID else { return nil }
        var file = values.ref(id)
        if let shared = folder.shared { file.keptFor = ((record.segment, Int(record.offset)), folder.retained, shared) }
        return file
    }

    /// Removes `segment`, superseded, once it is out of ``segments``: at once, or when no process that
    /// follows the store may still read it (``RetainedSegments``).
    func retire(_ segment: SegmentFile) {
        folder.retained.retire(segment, shared: folder.shared)
    }

    /// `id + count`, or an error when segment numbers run out (never in practice: 4 billion segments).
    static func segmentID(after id: UInt32, skipping count: UInt32) throws -> UInt32 {
        let (next, overflow) = id.addingReportingOverflow(count)
        if overflow { throw StorageError.corrupted("the store has run out of segment numbers (\(hex(UInt64(id), digits: 8)))") }
        return next
    }

    // MARK: Dead bytes

    /// The dead-byte rule (compaction's trigger): a record whose key has a later one, or none, is dead.
    func markDead(_ old: DiskRecord) {
        // A record replaced soon after it was written is in the active segment: no lookup by number
        // (a SipHash of it, ~75 instructions of an overwrite or removal's ~4,800).
        if let active, active.id == old.segment {
            active.deadBytes += FileNumber.saturating(old.length)
        } else {
            segments[old.segment]?.deadBytes += FileNumber.saturating(old.length)
        }
    }

    /// The bytes `record` (`length` bytes of `file`, appended after this store's own: another
    /// process's) makes dead, as this store counts its own: the record a set or removal replaces, and
    /// every record but a set itself. Counted before the index takes `record`.
    func countDead(of record: SegmentRecord, length: Int, in file: SegmentFile, index: KeyDirectory) {
        switch record {
        case .set(let key, _):
            if let old = index.peek(key) { markDead(old) }
        case .remove(let key):
            if let old = index.peek(key) { markDead(old) }
            file.deadBytes += length
        case .access, .clear, .batch:
            file.deadBytes += length
        }
    }

    /// Dead and total bytes of records over every segment.
    var byteCounts: (dead: Int, total: Int) {
        var (dead, total) = (0, 0)
        for segment in segments.values {
            dead += segment.deadBytes
            total += segment.recordBytes
        }
        return (dead, total)
    }
}
