import Foundation

/// What the disk index knows of one stored value: where its set record is, and what it says.
struct DiskRecord: Equatable {
    var segment: UInt32
    var offset: UInt32
    /// The set record's length in bytes.
    var length: UInt32
    var value: StoredValue
    /// Seconds since 1970 (`Date.distantFuture` for never).
    var expiry: Double
    /// Seconds since 1970.
    var lastAccess: Double
    /// The key's ``KeyHash`` in this store.
    var keyHash: UInt64 = 0

    var size: Int { value.size }

    var fileID: UInt64? {
        if case .file(let id, _, _) = value { return id }
        return nil
    }
}

/// The disk engine's state and operations; lives on its ``DiskEngine``'s queue and is never shared.
///
/// Small values are packed into append-only segment files (``SegmentFormat``): a write is one
/// `pwrite` of one checksummed record to the active segment, a removal one tombstone. Large values
/// (and all of them when asked) are files of their own (``ValueFiles``), named by a record. The index
/// (key → where its record is) is the ``KeyDirectory``: the key directory file mapped at open, plus
/// what changed since, replayed from the records after it. Compaction copies the live records into a new
/// segment off the queue when most bytes are dead (``DiskStore/startCompactionIfNeeded()``).
final class DiskStore {
    let directory: String
    let readOnly: Bool
    /// Whether the store's writes are durable (``DiskConfig/durable``): a new segment's name is then
    /// flushed with the folder before a durable record in it counts as written.
    let durable: Bool
    var observers: ObservationCenter?
    /// Whether the caller runs on the queue of the engine that owns this store, for ``assertOnQueue(_:)``.
    var isOnOwningQueue: (() -> Bool)?
    /// The index, behind a lock of its own: besides this store (on the queue), only
    /// ``DiskEngine/record(forKey:)`` reads it, from any thread, to answer `existsObject` without
    /// the queue. Every change that several keys see at once is applied under one hold of the
    /// lock, and after the memory layers dropped the keys, so such a reader sees an operation
    /// entirely or not at all (Contract item 4). Never call out (observers, transformers) under it.
    let sharedIndex = Locked(KeyDirectory(seed: 0), order: .storeIndex)
    var totalSize = 0
    /// What opening found wrong (damaged records, files or metadata); empty after a clean open.
    var recoveryIssues: [StorageError] = []
    let values: ValueFiles
    let groupCommit = GroupCommit()
    /// Told the new folder when the store opened its path anew (``reopen()``).
    var didReopen: (FolderHandle) -> Void = { _ in }
    /// Runs work on the engine's queue later (compaction hands its results back through it).
    var schedule: @Sendable (@escaping @Sendable (DiskStore) -> Void) -> Void = { _ in }
    /// The folder: replaced when the store opens its path anew after the folder was removed (``reopen()``).
    var folder: StoreFolder
    /// Whether opening met a segment it could not read (not a regular file, or a damaged header): the
    /// value files no record names are then kept, since its records may name them.
    var hasUnreadSegments = false
    /// Segments numbered below this are superseded (``SegmentFormat``'s `floor`); new segments carry it.
    var floor: UInt32 = 0
    /// Every segment of the store by id; the active one is the highest.
    var segments: [UInt32: SegmentFile] = [:]
    /// Where records are appended; nil for a read-only store.
    var active: SegmentFile?
    var nextSegmentID: UInt32 = 1
    /// Reads (and memory hits) to be recorded as access records with the next append.
    var pendingAccesses: [(segment: UInt32, offset: UInt32, time: Double, keyHash: UInt64)] = []
    /// No entry expires before this (a lower bound), so most calls of ``removeExpired(now:)`` scan nothing.
    var earliestExpiry = Double.infinity
    /// Changes since the key directory was written (none at close: not written again).
    var changesSinceDirectory = 0
    /// Bumped by ``removeAll()`` and folder loss: a compaction begun before is discarded.
    var epoch = 0
    var isCompacting = false
    var memoryCaches: [WeakMemoryCache] = []
    /// How many appends (`pwrite`s of records) the store has made; for tests.
    var appendCount = 0
    /// Reused for every append, so a write allocates no buffer of its own: its `count` is the room it
    /// has (it only grows, up to 1 MiB), not the bytes of the last append.
    var scratch: [UInt8] = []
    /// When a write checks that the folder is still there (``ensureActive(checkingNow:)``).
    var folderLoss = FolderLossCheck()
    /// Reused for every read of a record (``load(_:_:)``), as ``scratch`` is for appends.
    var readScratch: [UInt8] = []
    /// A read-only store: what it has caught up to of a writer in another process (``catchUp()``).
    var followed = FollowedState()
    /// The same, for checks outside the queue (``DiskEngine``'s memory-hit and index paths).
    let followWatch = FollowWatch()

    struct WeakMemoryCache {
        weak var cache: MemoryCache?
    }

    /// The sizes and counts at which the store seals segments, compacts and writes snapshots.
    struct Thresholds: Sendable {
        /// Segments are sealed at this size; a new one is started for the next record.
        var segmentLimit = 64 << 20
        /// Compaction starts once dead bytes outweigh live ones and exceed this.
        var compactionMinimum = 4 << 20
        /// A store with this many entries writes its key directory when it closes (a smaller one replays fast).
        var directoryMinimum = 20_000
        /// The size at which the version-1 upgrade starts a new segment.
        var upgradeSegmentLimit = 64 << 20

        static let standard = Thresholds()
    }

    /// Thresholds lowered for the stores in one folder and the folders below it; for tests, which
    /// each lower them for a folder of their own (never for stores that other tests open meanwhile).
    static let thresholdOverrides = Locked<[String: Thresholds]>([:])

    /// This store's thresholds: the standard ones, or those its folder's tests set (``thresholdOverrides``).
    var thresholds: Thresholds

    /// The thresholds of a store in `directory`.
    static func thresholds(for directory: String) -> Thresholds {
        thresholdOverrides.withLock { overrides in
            guard !overrides.isEmpty else { return .standard }
            let match = overrides.keys.filter { directory == $0 || directory.hasPrefix($0 + "/") }.max { $0.count < $1.count }
            return match.flatMap { overrides[$0] } ?? .standard
        }
    }

    /// A store emptied by removals deletes its segments once they hold this many bytes (``removeKeys(_:durable:)``).
    static let emptyStoreResetMinimum = 64 << 10
    /// The longest key, in UTF-8 bytes.
    static let maxKeyLength = 1 << 20

    init(directory: String, readOnly: Bool, durable: Bool = false) throws {
        self.directory = directory
        self.readOnly = readOnly
        self.durable = durable
        thresholds = Self.thresholds(for: directory)
        folder = try StoreFolder(directory: directory, readOnly: readOnly)
        values = ValueFiles(folder: folder.handle)
        recoveryIssues += folder.issues
        if readOnly {
            defer { folder.endOpening() }
            try followOpening { try open() }
        } else {
            try open()
        }
    }

    /// Records pending accesses, writes the key directory of a large store and closes the files.
    func close() {
        defer {
            folder.shared?.unlock()
            folder.handle.unlock()
        }
        guard !readOnly else { return }
        try? flushAccesses()
        if changesSinceDirectory > 0, withIndex({ $0.count }) >= thresholds.directoryMinimum { try? writeDirectory() }
        try? groupCommit.switchFile(to: nil)
    }

    // MARK: Reading

    /// Runs `body` on the index, under its lock.
    func withIndex<Result>(_ body: (inout KeyDirectory) throws -> Result) rethrows -> Result {
        try sharedIndex.withLock(body)
    }

    func record(forKey key: String) -> DiskRecord? {
        withIndex { $0.peek(key) }
    }

    var keys: [String] { withIndex { $0.keys } }

    /// The path of the file that holds `record`'s value, if it has one of its own.
    func filePath(of record: DiskRecord) -> String? {
        record.fileID.map(values.path(of:))
    }

    /// The bytes stored for `key`, verified, counting the read as use.
    /// - Throws: ``StorageError/notFound``; ``StorageError/corrupted(_:)`` when the record or the value
    ///   file is damaged or missing (the entry is dropped); an I/O error otherwise.
    func read(_ key: String, now: Date) throws -> (data: Data, record: DiskRecord, path: String?) {
        assertOnQueue()
        // Marked used first: one lookup (a read that then fails has its entry dropped, or is an I/O error).
        let time = now.timeIntervalSince1970
        guard let record = withIndex({ $0.touch(key, time: time) }) else { throw StorageError.notFound }
        let data: Data
        do {
            data = try load(key, record)
        } catch let error as StorageError {
            // A reader beside a writer in another process: the value file may have been replaced
            // since the catch-up before this read. Caught up again, the key is read as it is now.
            if readOnly, catchUp() { return try read(key, now: now) }
            if case .corrupted = error { drop(key) }
            throw error
        }
        noteAccess(record, time: time)
        return (data, record, filePath(of: record))
    }

    /// The value bytes `record` names, verified (the record's checksum, its key, the file's hash).
    ///
    /// The record is read into ``readScratch`` (kept from one read to the next) and its key compared
    /// there, in place: the returned value is the read's one allocation.
    func load(_ key: String, _ record: DiskRecord) throws -> Data {
        guard let segment = segments[record.segment] else {
            throw StorageError.corrupted("the segment holding this key's record is missing")
        }
        let length = Int(record.length)
        if readScratch.count < length { readScratch = [UInt8](repeating: 0, count: max(length, 4096)) }
        defer { if readScratch.count > 1 << 20 { readScratch = [] } } // do not keep a large record's buffer
        return try readScratch.withUnsafeMutableBytes { scratch in
            let bytes = UnsafeMutableRawBufferPointer(rebasing: scratch[0..<length])
            let (storedKey, info) = try segment.setRecord(at: Int(record.offset), into: bytes)
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

    // MARK: Writing

    /// Checks what a write must refuse before any file is written.
    static func validate(key: String, size: Int, maxSize: Int) throws {
        if maxSize > 0, size > maxSize { throw StorageError.valueTooLarge(size: size, maxSize: maxSize) }
        if key.utf8.count > maxKeyLength { throw StorageError.keyTooLong(byteCount: key.utf8.count, limit: maxKeyLength) }
    }

    /// Whether a value of `size` bytes is kept in a file of its own.
    static func needsFile(size: Int, storesValuesAsFiles: Bool) -> Bool {
        storesValuesAsFiles || size >= ValueFiles.threshold
    }

    /// The ``KeyHash`` of `key` in this store.
    func keyHash(_ key: String) -> UInt64 {
        KeyHash.of(key, seed: folder.storeID)
    }

    func checkWritable() throws {
        if readOnly { throw StorageError.readOnly(directory: directory) }
    }

    /// What a committed write leaves to its caller, off the queue (``DiskEngine/write(_:_:expiry:now:config:onCommit:)``).
    struct WriteOutcome {
        /// The value's file (nil when packed).
        var path: String?
        /// The value file the write replaced: removed once the write is durable.
        var replaced: ValueFileRef?
        /// The group commit position a durable write waits for.
        var syncPosition: UInt64?
        /// Trimming to `maxSize` failed after the write was committed: the limit could not be held.
        var trimError: (any Error)?
    }

    /// Stores `data` for `key`, then trims to `maxSize`.
    /// - Parameter staged: The value file already written off the queue for this very write
    ///   (``DiskEngine/stage(_:_:config:)``), if any; this call ends it (names it in a record, or
    ///   removes it).
    func write(_ key: String, _ data: Data, staged: StagedValue? = nil, expiry: Date, now: Date, maxSize: Int,
               durable: Bool, storesValuesAsFiles: Bool = false) throws -> WriteOutcome {
        assertOnQueue()
        var staged = staged
        defer { staged?.file.remove() } // not used: no record names it
        try checkWritable()
        try Self.validate(key: key, size: data.count, maxSize: maxSize)
        applyMemoryHits(now: now)
        try ensureActive()
        // Staged in a folder that is no longer the store's (removed and made anew meanwhile), or
        // removed underneath: written again below, in the folder the store has now.
        if let file = staged?.file, file.folder !== values.handle || !file.exists {
            file.remove()
            staged = nil
        }
        // The previous bytes only for key observers (`KeyChange.edit(before:after:)`).
        let previousData = observers?.hasKeyObservers(key) == true ? record(forKey: key).flatMap { try? load(key, $0) } : nil
        let value: StoredValue
        if Self.needsFile(size: data.count, storesValuesAsFiles: storesValuesAsFiles) {
            let file = try staged ?? StagedValue(values.write(data, durable: durable), folder: values.handle, size: data.count)
            staged = nil
            value = .file(id: file.file.id, size: data.count, hash: file.hash)
        } else {
            value = .inline(size: data.count)
        }
        let time = now.timeIntervalSince1970
        let expiry = expiry.timeIntervalSince1970
        let location: (segment: UInt32, offset: Int, length: Int, end: UInt64)
        do {
            var key = key
            location = try key.withUTF8 { utf8 in
                try data.withUnsafeBytes { bytes in
                    let length = SegmentFormat.setLength(keyCount: utf8.count, expiry: expiry, inlineCount: bytes.count, value: value)
                    return try append(durable: durable, length: length) { out, salt in
                        _ = SegmentFormat.encodeSet(key: UnsafeRawBufferPointer(utf8), expiry: expiry, time: time, value: value,
                                                    inlineBytes: bytes, salt: salt, into: out)
                        return length
                    }
                }
            }
        } catch {
            if case .file(let id, _, _) = value { values.remove(id) }
            throw error
        }
        let record = DiskRecord(segment: location.segment, offset: UInt32(location.offset), length: UInt32(location.length),
                                value: value, expiry: expiry, lastAccess: time, keyHash: keyHash(key))
        invalidateMemory([key]) // before the index: see `sharedIndex`
        let previous = withIndex { index in index.set(key, record) }
        if let previous { forget(previous) }
        totalSize += record.size
        earliestExpiry = min(earliestExpiry, expiry)
        changesSinceDirectory += 1
        observers?.publish(.set(key: key, value: data, previous: previousData))
        var outcome = WriteOutcome(path: filePath(of: record), replaced: previous?.fileID.map(values.ref),
                                   syncPosition: durable ? location.end : nil)
        // The write is committed: a failing trim is reported (the limit could not be held), a
        // failing compaction is not (it is only housekeeping; a later write retries it).
        if maxSize > 0, totalSize > maxSize {
            do { try trim(toSize: maxSize, now: now) } catch { outcome.trimError = error }
        }
        startCompactionIfNeeded()
        return outcome
    }

    /// Appends pending access records and the records `encode` stores (with the active segment's
    /// salt) into the `length` bytes it is given, in one `pwrite`; returns the segment and offset where
    /// the last record starts (`encode` returns its length), its length, and the group commit position after it.
    ///
    /// The bytes are the store's ``scratch``, kept from one append to the next: a write allocates
    /// nothing of its own and encodes each field in place (``SegmentFormat/encodeSet(key:expiry:time:value:inlineBytes:salt:into:)``).
    @discardableResult
    func append(durable: Bool = false, length: Int, _ encode: (UnsafeMutableRawBufferPointer, UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
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
            try segment.append(UnsafeRawBufferPointer(rebasing: bytes[0..<total]))
            return last
        }
        folder.shared?.publish(length: segment.length) // readers in other processes: written (`pwrite` returned)
        let offset = segment.length - last
        segment.deadBytes += accessBytes
        pendingAccesses.removeAll(keepingCapacity: true)
        appendCount += 1
        folderLoss.didAppend()
        let end = groupCommit.noteAppend(total, to: segment, durable: durable)
        if scratch.count > 1 << 20 { scratch = [] } // do not keep a large value's buffer
        if segment.length >= thresholds.segmentLimit { try? roll() }
        return (segment.id, offset, last, end)
    }

    /// As ``append(durable:length:_:)``, for records that `encode` appends to an array (batches, and
    /// records whose length is not worked out beforehand).
    @discardableResult
    func append(durable: Bool = false, _ encode: (inout [UInt8], UInt64) -> Int) throws
        -> (segment: UInt32, offset: Int, length: Int, end: UInt64) {
        guard let segment = active else { throw StorageError.readOnly(directory: directory) }
        var records: [UInt8] = []
        let last = encode(&records, segment.salt)
        return try append(durable: durable, length: records.count) { out, _ in
            records.withUnsafeBytes { out.copyMemory(from: $0) }
            return last
        }
    }

    /// Writes the buffered access records.
    func flushAccesses() throws {
        guard !pendingAccesses.isEmpty, active != nil else { return }
        try append { _, _ in 0 }
    }

    /// Buffers an access record for `record` (a read, or a memory hit): the LRU order survives a restart.
    func noteAccess(_ record: DiskRecord, time: Double) {
        guard !readOnly else { return }
        pendingAccesses.append((record.segment, record.offset, time, record.keyHash))
        if pendingAccesses.count >= 256 { try? flushAccesses() }
    }

    /// A record that no longer holds a live value: its bytes become dead, its value file goes later.
    func forget(_ old: DiskRecord) {
        totalSize -= old.size
        segments[old.segment]?.deadBytes += Int(old.length)
    }

    /// Makes sure records can be appended. The folder may have been removed underneath, and maybe
    /// made anew by this or another process: then the store opens whatever stands at its path now,
    /// anew (``reopen()``), and never writes into it otherwise. If only the active segment was
    /// deleted, a new one is started and the entries it held fail their reads (``StorageError/corrupted(_:)``).
    ///
    /// A write right after the previous one skips the `fstat` that tells (``FolderLossCheck`` says
    /// when, and what that gives up); `checkingNow` makes it check regardless.
    /// - Returns: Whether the store was opened anew (files written for it before are gone).
    @discardableResult
    func ensureActive(checkingNow: Bool = false) throws -> Bool {
        try checkWritable()
        if checkingNow { folderLoss.expire() }
        if let active, !folderLoss.isDue() || !active.isDetached { return false }
        guard !folder.handle.isRemoved, folder.handle.isAtPath else {
            try reopen()
            return true
        }
        if let active { segments[active.id] = nil }
        try roll()
        return false
    }

    /// Seals the active segment and starts a new one (carrying `newFloor`, which then becomes the
    /// store's floor). A number a file that is not the store's already has is passed over.
    func roll(floor newFloor: UInt32? = nil) throws {
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
        active = next
        publishStructure()
    }

    /// Tells readers in other processes that the store's files changed (``SharedState``): they open
    /// it anew before their next operation.
    func publishStructure() {
        guard !readOnly, let shared = folder.shared else { return }
        shared.publishStructure(store: folder.storeID, segment: active?.id ?? 0, salt: active?.salt ?? 0, length: active?.length ?? 0)
    }

    /// `id + count`, or an error when segment numbers run out (never in practice: 4 billion segments).
    static func segmentID(after id: UInt32, skipping count: UInt32) throws -> UInt32 {
        let (next, overflow) = id.addingReportingOverflow(count)
        if overflow { throw StorageError.corrupted("the store has run out of segment numbers (\(hex(UInt64(id), digits: 8)))") }
        return next
    }
}

/// A value file written off the queue, before the record that will name it.
struct StagedValue: Sendable {
    var file: ValueFileRef
    var hash: UInt64
    var size: Int

    init(_ written: (id: UInt64, hash: UInt64), folder: FolderHandle, size: Int) {
        file = ValueFileRef(folder: folder, id: written.id)
        (hash, self.size) = (written.hash, size)
    }
}
