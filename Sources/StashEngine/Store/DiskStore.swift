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

/// The disk engine's state and its reads; lives on its ``DiskEngine``'s queue and is never shared.
///
/// Small values are packed into append-only segment files (``SegmentFormat``): a write is one
/// `pwrite` of one checksummed record to the active segment, a removal one tombstone. Large values
/// (and all of them when asked) are files of their own (``ValueFiles``), named by a record. The index
/// (key → where its record is) is the ``KeyDirectory``: the key directory file read at open, plus
/// what changed since, replayed from the records after it.
///
/// The store holds the index, its totals and the sharing component; its files are its ``SegmentLog``.
/// The work on them is done by types made for one call: ``WritePath`` (writes, batches, removals),
/// ``StoreOpening`` (recovery at open) and ``Compaction`` (which copies the live records into new
/// segments off the queue when most bytes are dead).
package final class DiskStore {
    // `@exclusivity(unchecked)` on the properties every write changes: they are only touched on the queue,
    // one access at a time, and the run-time check the optimizer keeps on a class's `var` cost ~60
    // instructions each (Docs/Architecture.md, "The hot path", step 7). The same in `SegmentLog`,
    // `SegmentFile`, `GroupCommit` (under its condition's lock) and the layers' `StoreLayers`.
    package let directory: String
    /// How the store shares its folder with other processes: what an operation does before and after
    /// its work, how it opens and closes (``ProcessSharing``).
    let sharing: any ProcessSharing
    /// Whether the store writes to its files (``SharingMode/writes``: not a reader).
    package let writes: Bool
    /// Whether the store's writes are durable (``DiskConfig/durable``): a new segment's name is then
    /// flushed with the folder before a durable record in it counts as written.
    package let durable: Bool
    /// The layers above: told what changed, asked for memory hits (nil for a store no engine holds).
    /// A constant, so that the four calls of a write reach it without a retain and a release each.
    let client: (any EngineClient)?
    /// Whether the caller runs on the queue of the engine that owns this store, for ``assertOnQueue(_:)``.
    @exclusivity(unchecked) var isOnOwningQueue: (() -> Bool)?
    /// The index, behind a lock of its own: besides this store (on the queue), it is read from any
    /// thread by ``DiskEngine/record(forKey:)`` (`existsObject` without the queue) and by reads off the
    /// queue (``readOffQueue(_:now:)``). Every change that several keys see at once is applied under
    /// one hold of the lock, so such a reader sees an operation entirely or not at all (Contract
    /// item 4); the memory layers drop the keys in that same hold, before the index changes, so a
    /// memory layer that puts in a value read off the queue (``DiskEngine/ifCurrent(_:_:generation:_:)``, under
    /// this lock) never puts back one a write replaced. Never call out (observers, transformers)
    /// under it; the memory layers' lock is the one taken inside it.
    let sharedIndex = Locked(KeyDirectory(seed: 0), order: .storeIndex)
    /// Which index ``sharedIndex`` holds, written and read under its lock: bumped when the store
    /// starts opening its files anew and again once it has (``rebuildingIndex(_:)``: a folder made
    /// anew, ``reopen()``, and a catch-up with another process's change to the files,
    /// ``CatchingUp/openAgain(_:publishing:)``), so odd while the index is rebuilt record by record.
    /// A read off the queue takes no answer from an index being rebuilt, and a memory layer puts in
    /// what it read only from the index it read it in: a folder made anew
    /// numbers its segments and places its records as the old one did.
    let indexGeneration = AtomicWord()
    /// The store's files: folder, segments, value files, and the access records of the next append.
    package let log: SegmentLog
    @exclusivity(unchecked) var totalSize = 0
    /// What opening found wrong (damaged records, files or metadata); empty after a clean open.
    var recoveryIssues: [StorageError] = []
    /// Told the new folder when the store opened its path anew (``reopen()``).
    var didReopen: (FolderHandle) -> Void = { _ in }
    /// Runs work on the engine's queue later, unless the store is closed first (compaction hands its
    /// results back through it); it never keeps the engine open (``StoreTurn``).
    var schedule: @Sendable (@escaping @Sendable (DiskStore) -> Void) -> Void = { _ in }
    /// No entry expires before this (a lower bound), so most calls of ``WritePath/removeExpired(now:)`` scan nothing.
    @exclusivity(unchecked) var earliestExpiry = Double.infinity
    /// Changes since the key directory was written (none at close: not written again). A change lets a
    /// uses file made ready go at once: the close writes a directory instead, and the file's blocks may
    /// be what the next write needs.
    @exclusivity(unchecked) var changesSinceDirectory = 0 {
        didSet { if preparedUses != nil { dropPreparedUses() } }
    }
    /// Reads recorded (access records) since the key directory was written: many of them make the next
    /// open replay them all, so a close writes the directory anew then too (as a checkpoint).
    var accessesSinceDirectory: Int {
        get { log.accessesSinceDirectory }
        set { log.accessesSinceDirectory = newValue }
    }
    /// The next key directory, kept as the store goes once it wrote many entries (a sole writer's).
    var directoryBuilder: DirectoryBuilder?
    /// The key uses file this store's close will write, made ready ahead (``prepareUsesFileIfDue()``).
    var preparedUses: PreparedUsesFile?
    /// How many key uses files this store began to make ready (tests see when one was, and when not).
    var usesFilesMadeReady = 0
    /// The key directory's pages as this store reads them (``checkIndexWhole()``, on the queue only).
    var directoryPages = DirectoryPagesState()
    /// Bumped by ``WritePath/removeAll()`` and folder loss: a compaction begun before is discarded.
    @exclusivity(unchecked) var epoch = 0
    @exclusivity(unchecked) var isCompacting = false
    /// A shared writer's compaction, made in bounded steps (``Compaction/stepIfNeeded()``).
    var compactionCycle = CompactionCycle()
    /// What changes the store's content: writes, batches, removals.
    package var writer: WritePath { WritePath(store: self) }
    /// The store's compaction (its state is the three properties above).
    var compaction: Compaction { Compaction(store: self) }
    /// The deletions `removeAll()` leaves to a background thread; ``close()`` waits for them.
    let housekeeping = DispatchGroup()
    /// The sizes and counts at which the store seals segments, compacts and writes key directories.
    package struct Thresholds: Sendable {
        /// Segments are sealed at this size; a new one is started for the next record.
        var segmentLimit = 64 << 20
        /// Compaction starts once dead bytes outweigh live ones and exceed this.
        var compactionMinimum = 4 << 20
        /// A writer in several processes copies at most this many bytes of live records in one call
        /// (a record longer than this alone), so that a call holds the folder's lock for a bounded time.
        var compactionStep = 4 << 20
        /// A writer in several processes whose index has at most this many entries writes the key
        /// directory before a step deletes drained segments (a few milliseconds): the place in the order
        /// of use of the entries the step moved is then in the files, for the processes that open the
        /// store anew after the step and after a kill (a replay finds neither their originals nor a
        /// directory that has them).
        var stepDirectoryMaximum = 1 << 14
        /// A store with this many entries keeps a key directory: written when it closes after a change,
        /// and at compaction (``DiskStore/keepsDirectory``). About a millisecond of replay at open (200-byte
        /// values): a smaller store replays in less, and its close writes no directory.
        var directoryMinimum = 1_000
        /// A store whose segments hold this many bytes of records keeps a key directory too, whatever its
        /// entry count: what an open replays is every record (overwritten ones and access records included).
        var directoryMinimumBytes = 1 << 20
        /// A sole writer whose index has this many entries written since its key directory keeps the next
        /// directory as it goes (``DirectoryBuilder``), so that its close does not place every entry anew.
        var directoryBuilderMinimum = 1 << 14
        /// The fewest entries a kept directory's file has room for (it doubles from there as entries come).
        var keptDirectoryCapacity = 1 << 15
        /// A store that only read makes its key uses file ready ahead (``PreparedUsesFile``) when that
        /// file has at least this many bytes (~45,000 entries): a smaller one is written at close in little time.
        var preparedUsesMinimum = 1 << 20
        /// The size at which the version-1 upgrade starts a new segment.
        var upgradeSegmentLimit = 64 << 20
        /// Whether a writer that keeps the folder to itself appends through a mapping of its active
        /// segment (``SegmentWriteWindow``) where the platform allows; off only for the tests that stop
        /// a write at its `pwrite`.
        var appendsThroughMapping = true

        package static let standard = Thresholds()
    }

    /// Thresholds lowered for the stores in one folder and the folders below it; for tests, which
    /// each lower them for a folder of their own (never for stores that other tests open meanwhile).
    static let thresholdOverrides = Locked<[String: Thresholds]>([:])

    /// This store's thresholds: the standard ones, or those its folder's tests set (``thresholdOverrides``).
    @exclusivity(unchecked) var thresholds: Thresholds

    /// The thresholds of a store in `directory`.
    static func thresholds(for directory: String) -> Thresholds {
        thresholdOverrides.withLock { overrides in
            guard !overrides.isEmpty else { return .standard }
            let match = overrides.keys.filter { directory == $0 || directory.hasPrefix($0 + "/") }.max { $0.count < $1.count }
            return match.flatMap { overrides[$0] } ?? .standard
        }
    }

    /// A store emptied by removals deletes its segments once they hold this many bytes (``WritePath/removeKeys(_:durable:)``).
    static let emptyStoreResetMinimum = 64 << 10
    /// The longest key, in UTF-8 bytes.
    static let maxKeyLength = 1 << 20

    /// - Parameter lazyDirectory: Whether the open reads the key directory's pages as lookups first need
    ///   them (the engine's stores, whose every operation first calls ``checkIndexWhole()``), not whole.
    package init(directory: String, sharing mode: SharingMode, durable: Bool = false, mapsSegments: Bool = true,
                 client: (any EngineClient)? = nil, lazyDirectory: Bool = false) throws {
        self.directory = directory
        self.client = client
        self.durable = durable
        sharing = mode.makeSharing()
        writes = mode.writes
        thresholds = Self.thresholds(for: directory)
        let folder = try StoreFolder(directory: directory, sharing: mode)
        log = SegmentLog(directory: directory, folder: folder, randomFileIDs: mode.numbersValueFilesAtRandom, writes: mode.writes,
                         durable: durable, segmentLimit: thresholds.segmentLimit, mapsSegments: mapsSegments,
                         mapsAppends: mapsSegments && mode == .soleWriter && thresholds.appendsThroughMapping)
        recoveryIssues += folder.issues
        directoryPages.nextOpenIsLazy = lazyDirectory && mode != .sharedWriter
        try sharing.open(self)
    }

    /// A large index is let go of on the release thread (``BackgroundRelease``): freeing a key at a time
    /// took 20–30 ms of a close after filling a million entries.
    deinit {
        let overlay = withIndex { $0.overlayCount }
        if overlay >= 10_000 { BackgroundRelease.letGo(of: sharedIndex, length: overlay * 128) }
    }

    /// Records pending accesses, writes the key directory of a store that keeps one and closes the files.
    package func close() {
        sharing.close(self)
    }

    /// A writer's last work before its files close: a removeAll's deletions finish first (the next
    /// opener, a `stash check` right after a `stash clear`, say, must not find the old segments still
    /// there), then the pending access records, a key directory for a large store, the last flush.
    func finishWriting() {
        housekeeping.wait()
        log.folder.retained.removeUnneeded(in: log.folder.handle, shared: log.folder.shared)
        try? log.flushAccesses()
        try? log.groupCommit.switchFile(to: nil)
        // The active segment's reserved room is cut off before the directory is written: on ext4 that
        // `ftruncate` waited 25 ms behind the freeing of the replaced directory or uses file. Its mapping
        // goes after: unmapping it (on the release thread) took a core from the directory's hashing, and
        // a close after filling a million entries from 14-19 ms to 38-50 ms.
        let writeWindow = log.active?.endAppends()
        let count = withIndex { $0.count }
        if changesSinceDirectory > 0 || usesAreWorthWriting(count: count), keepsDirectory || compactionCycle.drainedSinceDirectory {
            try? writeDirectory(thenLoad: false, durable: false)
        }
        directoryBuilder?.cancel() // one the close did not use: its file goes now, not with the store
        directoryBuilder = nil
        dropPreparedUses()
        withExtendedLifetime(writeWindow) {}
    }

    /// Whether enough of the store's `count` entries were used since its key directory for the close to
    /// write their uses (a key uses file where nothing else changed): more than an eighth. Below that, the
    /// access records after the directory's position say the same at the next open, for less.
    func usesAreWorthWriting(count: Int) -> Bool {
        accessesSinceDirectory > count / 8
    }

    /// Whether the store is large enough to keep a key directory (``Thresholds/directoryMinimum``,
    /// ``Thresholds/directoryMinimumBytes``): replaying its records at open would cost more than reading one.
    var keepsDirectory: Bool {
        withIndex { $0.count } >= thresholds.directoryMinimum
            || log.byteCounts.total >= thresholds.directoryMinimumBytes
    }

    // MARK: Reading

    /// Runs `body` on the index, under its lock.
    package func withIndex<Result>(_ body: (inout KeyDirectory) throws -> Result) rethrows -> Result {
        try sharedIndex.withLock(body)
    }

    /// The path of the file that holds `record`'s value, if it has one of its own.
    package func filePath(of record: DiskRecord) -> String? {
        log.filePath(of: record)
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

    /// The bytes stored for `key`, verified, counting the read as use.
    /// - Throws: ``StorageError/notFound``; ``StorageError/corrupted(_:)`` when the record or the value
    ///   file is damaged or missing (the entry is dropped); an I/O error otherwise.
    package func read(_ key: String, now: Date) throws -> (data: Data, record: DiskRecord, path: String?) {
        assertOnQueue()
        try sharing.checkOperation()
        // Marked used first: one lookup (a read that then fails has its entry dropped, or is an I/O error);
        // after the memory layer's hits, made before it.
        applyMemoryHits(now: now)
        let time = StoredTime.seconds(now)
        guard let (record, recency) = withIndex({ $0.markUsed(key, time: time) }) else { throw StorageError.notFound(key: key) }
        let data: Data
        do {
            data = try log.load(key, record)
        } catch {
            switch sharing.readFailed(error, in: self) {
            case .fail: throw error
            case .readAgain: return try read(key, now: now)
            case .dropIfDamaged:
                if case .corrupted? = error as? StorageError { writer.drop(key) }
                throw error
            }
        }
        readNoted(record, time: time, recency: recency)
        return (data, record, log.filePath(of: record))
    }

}

/// A value file written off the queue, before the record that will name it.
package struct StagedValue: Sendable {
    package var file: ValueFileRef
    package var hash: UInt64
    package var size: Int

    package init(_ written: (id: UInt64, hash: UInt64), folder: FolderHandle, size: Int) {
        file = ValueFileRef(folder: folder, id: written.id, keptFor: nil)
        (hash, self.size) = (written.hash, size)
    }
}
