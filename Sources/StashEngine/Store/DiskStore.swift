package import Foundation

/// What the disk index knows of one stored value: where its set record is, and what it says.
package struct DiskRecord: Equatable {
    package var segment: UInt32
    package var offset: UInt32
    /// The set record's length in bytes.
    package var length: UInt32
    package var value: StoredValue
    /// A ``StoredTime`` (``StoredTime/never`` for never).
    package var expiry: Double
    /// A ``StoredTime``.
    package var lastAccess: Double
    /// The key's ``KeyHash`` in this store. No default: a record indexed without it (0, the
    /// directory's empty slot) was written into the key directory as an empty slot and lost.
    var keyHash: UInt64

    package var size: Int { value.size }

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
/// (key → where its record is) is the ``KeyDirectory``: the key directory file read at open, plus
/// what changed since, replayed from the records after it. Compaction copies the live records into a new
/// segment off the queue when most bytes are dead (``DiskStore/startCompactionIfNeeded()``).
package final class DiskStore {
    package let directory: String
    /// How the store shares its folder with other processes: what an operation does before and after
    /// its work, how it opens and closes (``ProcessSharing``).
    let sharing: any ProcessSharing
    /// Whether the store writes to its files (``SharingMode/writes``: not a reader).
    package let writes: Bool
    /// Whether the store's writes are durable (``DiskConfig/durable``): a new segment's name is then
    /// flushed with the folder before a durable record in it counts as written.
    package let durable: Bool
    /// The layers above: told what changed, asked for memory hits (set by the ``DiskEngine`` once opened).
    var client: (any EngineClient)?
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
    package let values: ValueFiles
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
    /// Reads recorded (access records) since the key directory was written: many of them make the next
    /// open replay them all, so a close writes the directory anew then too (as a checkpoint).
    var accessesSinceDirectory = 0
    /// Bumped by ``removeAll()`` and folder loss: a compaction begun before is discarded.
    var epoch = 0
    var isCompacting = false
    /// A shared writer's compaction, made in bounded steps (``DiskStore/stepCompactionIfNeeded()``).
    var compactionCycle = CompactionCycle()
    /// How many appends (`pwrite`s of records) the store has made; for tests.
    var appendCount = 0
    /// The deletions `removeAll()` leaves to a background thread; ``close()`` waits for them.
    let housekeeping = DispatchGroup()
    /// Reused for every append, so a write allocates no buffer of its own: its `count` is the room it
    /// has (it only grows, up to 1 MiB), not the bytes of the last append.
    var scratch: [UInt8] = []
    /// When a write checks that the folder is still there (``ensureActive(checkingNow:)``).
    var folderLoss = FolderLossCheck()
    /// Reused for every read of a record (``load(_:_:)``), as ``scratch`` is for appends.
    var readScratch: [UInt8] = []
    /// The sizes and counts at which the store seals segments, compacts and writes key directories.
    package struct Thresholds: Sendable {
        /// Segments are sealed at this size; a new one is started for the next record.
        var segmentLimit = 64 << 20
        /// Compaction starts once dead bytes outweigh live ones and exceed this.
        var compactionMinimum = 4 << 20
        /// A writer in several processes copies at most this many bytes of live records in one call
        /// (a record longer than this alone), so that a call holds the folder's lock for a bounded time.
        var compactionStep = 4 << 20
        /// A store with this many entries writes its key directory when it closes (a smaller one replays fast).
        var directoryMinimum = 20_000
        /// The size at which the version-1 upgrade starts a new segment.
        var upgradeSegmentLimit = 64 << 20

        package static let standard = Thresholds()
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

    package init(directory: String, sharing mode: SharingMode, durable: Bool = false) throws {
        self.directory = directory
        self.durable = durable
        sharing = mode.makeSharing()
        writes = mode.writes
        thresholds = Self.thresholds(for: directory)
        folder = try StoreFolder(directory: directory, sharing: mode)
        values = ValueFiles(folder: folder.handle, randomIDs: mode.numbersValueFilesAtRandom)
        recoveryIssues += folder.issues
        try sharing.open(self)
    }

    /// Records pending accesses, writes the key directory of a large store and closes the files.
    package func close() {
        sharing.close(self)
    }

    /// A writer's last work before its files close: a removeAll's deletions finish first (the next
    /// opener, a `stash check` right after a `stash clear`, say, must not find the old segments still
    /// there), then the pending access records, a key directory for a large store, the last flush.
    func finishWriting() {
        housekeeping.wait()
        try? flushAccesses()
        let count = withIndex { $0.count }
        if changesSinceDirectory > 0 || accessesSinceDirectory > count / 8, count >= thresholds.directoryMinimum { try? writeDirectory(thenLoad: false) }
        try? groupCommit.switchFile(to: nil)
    }

    // MARK: Reading

    /// Runs `body` on the index, under its lock.
    package func withIndex<Result>(_ body: (inout KeyDirectory) throws -> Result) rethrows -> Result {
        try sharedIndex.withLock(body)
    }

    package func record(forKey key: String) -> DiskRecord? {
        withIndex { $0.peek(key) }
    }

    package var keys: [String] { withIndex { $0.keys } }

    // What the layers above read of the store's state. Its stored properties stay internal: the
    // optimizer then sees every access to them and drops the run-time exclusivity checks that a
    // property visible to another module costs on every access (about 1,000 instructions a write).

    /// The bytes of every stored value (``totalSize``).
    package var storedBytes: Int { totalSize }
    /// No entry expires before this (``earliestExpiry``, a lower bound).
    package var expiryLowerBound: Double { earliestExpiry }
    /// What opening found wrong (``recoveryIssues``).
    package var issuesFoundAtOpen: [StorageError] { recoveryIssues }

    /// The path of the file that holds `record`'s value, if it has one of its own.
    package func filePath(of record: DiskRecord) -> String? {
        record.fileID.map(values.path(of:))
    }

    /// The bytes stored for `key`, verified, counting the read as use.
    /// - Throws: ``StorageError/notFound``; ``StorageError/corrupted(_:)`` when the record or the value
    ///   file is damaged or missing (the entry is dropped); an I/O error otherwise.
    package func read(_ key: String, now: Date) throws -> (data: Data, record: DiskRecord, path: String?) {
        assertOnQueue()
        try sharing.checkOperation()
        // Marked used first: one lookup (a read that then fails has its entry dropped, or is an I/O error).
        let time = StoredTime.seconds(now)
        guard let record = withIndex({ $0.touch(key, time: time) }) else { throw StorageError.notFound(key: key) }
        let data: Data
        do {
            data = try load(key, record)
        } catch {
            switch sharing.readFailed(error, in: self) {
            case .fail: throw error
            case .readAgain: return try read(key, now: now)
            case .dropIfDamaged:
                if case .corrupted? = error as? StorageError { drop(key) }
                throw error
            }
        }
        noteAccess(record, time: time)
        return (data, record, filePath(of: record))
    }

    /// The value bytes `record` names, verified (the record's checksum, its key, the file's hash).
    ///
    /// The record is read into ``readScratch`` (kept from one read to the next) and its key compared
    /// there, in place: the returned value is the read's one allocation.
    package func load(_ key: String, _ record: DiskRecord) throws -> Data {
        guard let segment = segments[record.segment] else {
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
}

/// A value file written off the queue, before the record that will name it.
package struct StagedValue: Sendable {
    package var file: ValueFileRef
    package var hash: UInt64
    package var size: Int

    package init(_ written: (id: UInt64, hash: UInt64), folder: FolderHandle, size: Int) {
        file = ValueFileRef(folder: folder, id: written.id)
        (hash, self.size) = (written.hash, size)
    }
}
