import Foundation

/// The disk index and its operations; lives on its ``DiskEngine``'s queue and is never shared.
///
/// Each value is a raw file named `<hash of key>.<generation>`: a write goes to a new file, then a
/// journal record makes it the key's value, then the old file is removed. A crash at any instant
/// so leaves the old value or the new one, never a torn file under a live record (DESIGN item 6).
final class DiskStore {
    let directory: String
    var observers: ObservationCenter?
    /// The index, behind a lock of its own: besides this store (on the queue), only
    /// ``DiskEngine/record(forKey:)`` reads it, from any thread, to answer `existsObject` without
    /// the queue. Every change that several keys see at once is applied under one hold of the
    /// lock, and after the memory layers dropped the keys, so such a reader sees an operation
    /// entirely or not at all (DESIGN item 4). Never call out (observers, transformers) under it.
    let sharedIndex = Locked(LRUIndex<DiskRecord>())
    private(set) var totalSize = 0
    /// What opening found wrong (a torn or damaged journal); empty after a clean open.
    private(set) var recoveryIssues: [StorageError] = []
    var journal: Journal
    /// Generations, and value files written off the queue (see ``ValueFileStaging``).
    let staging: ValueFileStaging
    /// The highest generation the journal named (replay only).
    private var highestGeneration: UInt64 = 0
    /// No entry expires before this (a lower bound), so most calls of ``removeExpired(now:)`` scan nothing.
    private var earliestExpiry = Double.infinity
    private var memoryCaches: [WeakMemoryCache] = []
    /// Whether value files no record points to may exist: true after opening (a crash may have left
    /// some) and after a file could not be deleted. Compaction sweeps the folder only then, so that
    /// a read-heavy store does not list its whole folder every time the journal is compacted.
    private var mayHaveOrphans = true

    private struct WeakMemoryCache {
        weak var cache: MemoryCache?
    }

    init(directory: String) throws {
        self.directory = directory
        staging = ValueFileStaging(directory: directory)
        journal = Journal(directory: directory)
        // Records are applied as they are parsed, under one hold of the index lock. A compacted
        // journal is one `set` per entry: the index is reserved for them, so it does not grow (and
        // rehash) step by step, nor keep the slack of its last doubling.
        let journal = journal
        let (damage, existed) = try sharedIndex.withLock { index in
            try journal.open(reserve: { index.reserveCapacity($0) }, apply: { apply($0, to: &index) })
        }
        staging.raise(above: highestGeneration)
        // No value file can be staged yet (the engine is not handed out): the sweeps here guard nothing.
        if let damage {
            recoveryIssues.append(.corrupted("\(damage); the records after it were dropped"))
            _ = try? removeUnreferencedFiles(guardingStaged: false)
        } else if !existed, let removed = try? removeUnreferencedFiles(guardingStaged: false), removed > 0 {
            // A new journal in a folder that has value files: the old journal was lost.
            recoveryIssues.append(.corrupted("the journal was missing; \(removed) unlisted value files were removed"))
        }
    }

    func close() {
        try? journal.flush()
        journal.close()
    }

    // MARK: Reading

    func path(forKey key: String, generation: UInt64) -> String {
        Self.valueFilePath(in: directory, forKey: key, generation: generation)
    }

    /// `<32 hex digits of the key's SHA-256>.<hex generation>`: the name of a value file.
    static func fileName(forKey key: String, generation: UInt64) -> String {
        valueFilePath(in: nil, forKey: key, generation: generation)
    }

    /// `directory/<file name>` (or the file name alone), built in one buffer: every disk read,
    /// write and removal names a file, and concatenating the parts cost more than the hash.
    static func valueFilePath(in directory: String?, forKey key: String, generation: UInt64) -> String {
        let hasDirectory = directory != nil
        var directory = directory ?? ""
        let digits = generation == 0 ? 1 : (64 - generation.leadingZeroBitCount + 3) / 4
        return directory.withUTF8 { prefix in
            let start = hasDirectory ? prefix.count + 1 : 0
            let length = start + 32 + 1 + digits
            return String(unsafeUninitializedCapacity: length) { out in
                if hasDirectory {
                    _ = UnsafeMutableBufferPointer(rebasing: out[0..<prefix.count]).initialize(from: prefix)
                    out[prefix.count] = 47 // "/"
                }
                SHA256.writeHex(of: key, into: UnsafeMutableBufferPointer(rebasing: out[start..<(start + 32)]))
                out[start + 32] = 46 // "."
                var rest = generation
                for index in stride(from: length - 1, through: start + 33, by: -1) {
                    out[index] = SHA256.hexDigit(UInt8(truncatingIfNeeded: rest & 0xf))
                    rest >>= 4
                }
                return length
            }
        }
    }

    /// Runs `body` on the index, under its lock.
    func withIndex<Result>(_ body: (inout LRUIndex<DiskRecord>) throws -> Result) rethrows -> Result {
        try sharedIndex.withLock(body)
    }

    func record(forKey key: String) -> DiskRecord? {
        withIndex { $0.peek(key) }
    }

    var keys: [String] { withIndex { $0.keys } }

    /// The bytes stored for `key`, counting the read as use.
    /// - Throws: ``StorageError/notFound``; ``StorageError/corrupted(_:)`` for a missing, truncated
    ///   or foreign value file (the entry is dropped); an I/O error otherwise.
    func read(_ key: String, now: Date) throws -> (data: Data, record: DiskRecord, path: String) {
        guard var record = record(forKey: key) else { throw StorageError.notFound }
        let path = path(forKey: key, generation: record.generation)
        let data: Data
        do {
            data = try FileIO.readFile(path, expectedSize: record.size)
        } catch let error as StorageError {
            if case .corrupted = error {
                drop(key)
                throw error
            }
            if FileIO.isErrno(error, .ENOENT) {
                drop(key)
                throw StorageError.corrupted("the value file of this key is missing: \(path)")
            }
            throw error
        }
        record.lastAccess = now.timeIntervalSince1970
        withIndex { _ = $0.use(key) { $0 = record } }
        journal.noteAccess(key: key, time: record.lastAccess)
        try? compactIfNeeded() // a read-only workload grows the journal with access records too
        return (data, record, path)
    }

    // MARK: Writing

    /// Checks what a write must refuse before any file is written.
    static func validate(key: String, size: Int, maxSize: Int) throws {
        if maxSize > 0, size > maxSize { throw StorageError.valueTooLarge(size: size, maxSize: maxSize) }
        if key.utf8.count > maxKeyLength { throw StorageError.keyTooLong(byteCount: key.utf8.count, limit: maxKeyLength) }
    }

    /// Stores `data` for `key`, then trims to `maxSize`.
    /// - Returns: The value file's path, and the generation of the value it replaced, whose file
    ///   nothing refers to any more: the caller deletes it once off the queue
    ///   (``DiskEngine/removeReplaced(key:generation:)``; naming it hashes the key, kept off the queue too).
    /// - Parameter staged: The value file already written off the queue by ``ValueFileStaging/stage(_:_:durable:)``
    ///   for this very write, if any; this call ends it (uses it, or removes it).
    func write(_ key: String, _ data: Data, staged: StagedValue? = nil, expiry: Date, now: Date, maxSize: Int,
               durable: Bool) throws -> (path: String, replaced: UInt64?) {
        defer { if let staged { staging.finish(staged) } }
        var staged = staged
        /// Gives up the staged file (the write then makes its own on the queue).
        func discardStaged() {
            if let file = staged { removeOrNoteOrphan(file.path) }
            staged = nil
        }
        if let file = staged, file.size != data.count || file.durable != durable { discardStaged() }
        do {
            try Self.validate(key: key, size: data.count, maxSize: maxSize)
        } catch {
            discardStaged()
            throw error
        }
        applyMemoryHits(now: now)
        let previous = record(forKey: key)
        let previousData = observers?.hasKeyObservers(key) == true ? previous.flatMap { try? readQuietly(key, $0) } : nil
        if journal.isDetached { // the folder was removed, maybe made anew
            discardStaged()
            try recreateDirectory()
        }
        let generation = staged?.generation ?? staging.allocate()
        let record = DiskRecord(generation: generation, size: data.count,
                                expiry: expiry.timeIntervalSince1970, lastAccess: now.timeIntervalSince1970)
        let path = staged?.path ?? path(forKey: key, generation: record.generation)
        if staged == nil {
            do {
                do {
                    try FileIO.writeValueFile(path, in: directory, data, durable: durable)
                } catch where FileIO.isErrno(error, .ENOENT) {
                    try recreateDirectory()
                    try FileIO.writeValueFile(path, in: directory, data, durable: durable)
                }
            } catch {
                mayHaveOrphans = true // the failed write's cleanup is best effort
                throw error
            }
        }
        do {
            try journal.append([.set(key: key, record)], durable: durable)
        } catch {
            removeOrNoteOrphan(path)
            throw error
        }
        invalidateMemory([key]) // before the index: see `sharedIndex`
        apply(.set(key: key, record))
        observers?.publish(.set(key: key, value: data, previous: previousData))
        let replaced = previous?.generation
        // The write is committed: a failing trim still throws (the limit could not be held),
        // a failing compaction does not (it is only housekeeping; the next write retries it).
        if maxSize > 0, totalSize > maxSize {
            do {
                try trim(toSize: maxSize, now: now)
            } catch {
                if let replaced { removeOrNoteOrphan(self.path(forKey: key, generation: replaced)) }
                throw error
            }
        }
        try? compactIfNeeded()
        return (path, replaced)
    }

    /// A file that could not be deleted off the queue: the next compaction sweeps for it.
    func noteOrphan() {
        mayHaveOrphans = true
    }

    /// Removes `key`'s value, if any.
    func remove(_ key: String) throws {
        guard record(forKey: key) != nil else { return }
        try removeKeys([key])
        observers?.publish(.remove(keys: [key], reason: .removed))
    }

    /// Removes every value file of the store and starts an empty journal.
    func removeAll() throws {
        let keys = self.keys
        try journal.append([.clear], durable: false)
        invalidateMemory(nil) // before the index: see `sharedIndex`
        apply(.clear)
        if !FileManager.default.fileExists(atPath: directory) { try recreateDirectory() }
        try removeUnreferencedFiles(guardingStaged: true)
        try journal.rewrite(with: [])
        observers?.publish(.removeAll(keys: keys))
    }

    /// Removes every value that expired at or before `now`; returns their keys.
    @discardableResult
    func removeExpired(now: Date) throws -> [String] {
        let cutoff = now.timeIntervalSince1970
        // Trimming calls this on every write of a full store: skip the scan while nothing can have expired.
        guard cutoff >= earliestExpiry else { return [] }
        var expired: [String] = []
        var earliestRemaining = Double.infinity
        for (key, record) in withIndex({ $0.entries }) {
            if record.expiry <= cutoff { expired.append(key) } else { earliestRemaining = min(earliestRemaining, record.expiry) }
        }
        try removeAndPublish(expired, reason: .expired)
        earliestExpiry = earliestRemaining
        return expired
    }

    /// Removes expired values, then least recently used ones, until at most `maxSize` bytes remain.
    func trim(toSize maxSize: Int, now: Date) throws {
        guard totalSize > maxSize else { return }
        applyMemoryHits(now: now)
        try removeExpired(now: now)
        var evicted: [String] = []
        var freed = 0
        let totalSize = totalSize
        withIndex { index in
            index.forEachOldestFirst { key, record in
                guard totalSize - freed > maxSize else { return false }
                evicted.append(key)
                freed += record.size
                return true
            }
        }
        try removeAndPublish(evicted, reason: .evicted)
    }

    /// Removes `keys` and tells observers about those that are gone, also when some could not be removed.
    private func removeAndPublish(_ keys: [String], reason: StoreEvent.RemovalReason) throws {
        guard !keys.isEmpty else { return }
        do {
            try removeKeys(keys)
        } catch {
            // Some may be gone all the same: look each up (on success none is left, no lookups needed).
            let removed = withIndex { index in keys.filter { index.peek($0) == nil } }
            if !removed.isEmpty { observers?.publish(.remove(keys: removed, reason: reason)) }
            throw error
        }
        observers?.publish(.remove(keys: keys, reason: reason))
    }

    /// Attaches a memory layer, which then never holds a key the disk no longer has.
    func attach(_ cache: MemoryCache) {
        memoryCaches.removeAll { $0.cache == nil || $0.cache === cache }
        memoryCaches.append(WeakMemoryCache(cache: cache))
        cache.trackHits()
    }

    /// Drops `key` after its data proved unreadable (damaged file, or bytes that no longer decode).
    /// Unlike ``remove(_:)`` the entry goes even if its file cannot be deleted: it is known bad.
    func drop(_ key: String) {
        guard let record = record(forKey: key), (try? journal.append([.remove(key: key)], durable: false)) != nil else { return }
        invalidateMemory([key]) // before the index: see `sharedIndex`
        apply(.remove(key: key))
        removeOrNoteOrphan(path(forKey: key, generation: record.generation))
        observers?.publish(.remove(keys: [key], reason: .removed))
    }

    // MARK: Helpers

    /// Deletes a file no record points to any more; if that fails it is an orphan for compaction.
    private func removeOrNoteOrphan(_ path: String) {
        if (try? FileIO.remove(path)) == nil { mayHaveOrphans = true }
    }

    private func readQuietly(_ key: String, _ record: DiskRecord) throws -> Data {
        try FileIO.readFile(path(forKey: key, generation: record.generation), expectedSize: record.size)
    }

    /// Removes `keys`: journaled first (a crash then leaves them removed, their files orphans
    /// that compaction sweeps), then unlinked. A file that cannot be unlinked (read-only folder)
    /// puts its entry back and the first such error is thrown: nothing is reported removed that is not.
    private func removeKeys(_ keys: [String]) throws {
        let records = withIndex { index in keys.compactMap { key in index.peek(key).map { (key, $0) } } }
        guard !records.isEmpty else { return }
        try journal.append(records.map { .remove(key: $0.0) }, durable: false)
        var failure: (any Error)?
        var restored: [JournalRecord] = []
        var removed: [String] = []
        for (key, record) in records {
            do {
                try FileIO.remove(path(forKey: key, generation: record.generation))
                removed.append(key)
            } catch {
                failure = failure ?? error
                restored.append(.set(key: key, record))
            }
        }
        // Memory first, then every removal in one hold of the index lock: a reader off the queue
        // sees all of these keys removed or none (see `sharedIndex`).
        invalidateMemory(keys)
        withIndex { index in
            for key in removed { apply(.remove(key: key), to: &index) }
        }
        if let failure {
            try? journal.append(restored, durable: false)
            throw failure
        }
    }

    private func apply(_ record: JournalRecord) {
        withIndex { apply(record, to: &$0) }
    }

    /// Applies `record` to `index` (the locked index, or the caller already holds the lock).
    private func apply(_ record: JournalRecord, to index: inout LRUIndex<DiskRecord>) {
        switch record {
        case .set(let key, let info):
            if let old = index.set(key, info) { totalSize -= old.size }
            totalSize += info.size
            earliestExpiry = min(earliestExpiry, info.expiry)
            highestGeneration = max(highestGeneration, info.generation)
        case .remove(let key):
            if let old = index.remove(key) { totalSize -= old.size }
        case .access(let key, let time):
            index.use(key) { $0.lastAccess = time }
        case .clear:
            index.removeAll()
            totalSize = 0
        }
    }

    /// Counts memory hits as use, like disk reads (journaled, so the order survives a restart):
    /// a value that is hot in memory must not be the first evicted from disk.
    func applyMemoryHits(now: Date) {
        for weak in memoryCaches {
            if let cache = weak.cache { recordHits(of: cache, now: now) }
        }
    }

    /// Records `cache`'s pending memory hits as use at `now` (also when a storage is released).
    func recordHits(of cache: MemoryCache, now: Date) {
        let time = now.timeIntervalSince1970
        let hits = cache.takeRecentHits()
        guard !hits.isEmpty else { return }
        let used = withIndex { index in hits.filter { index.use($0, { $0.lastAccess = time }) } }
        for key in used { journal.noteAccess(key: key, time: time) }
    }

    private func invalidateMemory(_ keys: [String]?) {
        for weak in memoryCaches {
            guard let cache = weak.cache else { continue }
            if let keys { cache.remove(keys) } else { cache.removeAll() }
        }
    }

    private func compactIfNeeded() throws {
        guard journal.recordCount > 1000, journal.recordCount > 2 * withIndex({ $0.count }) else { return }
        try journal.rewrite(with: withIndex { $0.entriesOldestFirst }.map { JournalRecord.set(key: $0.key, $0.value) })
        if mayHaveOrphans { try removeUnreferencedFiles(guardingStaged: true) }
    }

    /// The directory was removed underneath: start over with an empty store in a new one.
    private func recreateDirectory() throws {
        try FileIO.createDirectory(directory)
        invalidateMemory(nil) // before the index: see `sharedIndex`
        apply(.clear)
        try journal.reopenAfterDirectoryLoss()
    }

    /// Deletes value files no record points to (left by a crash between a write and its record).
    /// Files that are not Stash's are left alone.
    /// - Parameter guardingStaged: Leave alone the files of writes staged off the queue whose record
    ///   is still to come: generations in flight, or handed out after the sweep began. Such a file
    ///   that is not in flight (a crash's orphan of a generation the journal never named) raises the
    ///   generations above it and is removed by a later sweep.
    /// - Returns: How many files were removed.
    @discardableResult
    private func removeUnreferencedFiles(guardingStaged: Bool) throws -> Int {
        let staged = guardingStaged ? staging.sweepGuard() : nil
        // Names built directly: going through the path's `lastPathComponent` (NSString) cost ~35,000
        // instructions per entry, which made the first compaction after opening a 10,000-entry
        // store stall its read for ~200 ms.
        let live = Set(withIndex { $0.entries }.map { Self.fileName(forKey: $0.key, generation: $0.value.generation) })
        var (removed, failed, deferred) = (0, false, false)
        for name in try FileIO.listDirectory(directory) where Self.isValueFileName(name) && !live.contains(name) {
            if let staged, let generation = Self.generation(ofValueFileName: name),
               staged.inFlight.contains(generation) || generation >= staged.next {
                if !staged.inFlight.contains(generation) {
                    staging.raise(above: generation)
                    deferred = true
                }
                continue
            }
            if (try? FileIO.remove(directory + "/" + name)) != nil { removed += 1 } else { failed = true }
        }
        mayHaveOrphans = failed || deferred
        return removed
    }

    /// The generation in a value file's name (the hex after the dot).
    static func generation(ofValueFileName name: String) -> UInt64? {
        guard let dot = name.utf8.firstIndex(of: 46) else { return nil }
        return UInt64(Substring(name.utf8[name.utf8.index(after: dot)...]), radix: 16)
    }

    /// The longest key, in UTF-8 bytes: journal records are capped (``JournalFormat/maxBodyLength``).
    static let maxKeyLength = 1 << 20

    /// `<32 hex digits>.<hex generation>`.
    static func isValueFileName(_ name: String) -> Bool {
        // On the UTF-8 bytes (the sweep checks every name in the folder): 32 lower-case hex
        // digits, a dot, then 1 to 16 of them.
        let utf8 = name.utf8
        guard (34...49).contains(utf8.count) else { return false }
        for (offset, byte) in utf8.enumerated() {
            let isHexDigit = (48...57).contains(byte) || (97...102).contains(byte)
            guard offset == 32 ? byte == 46 : isHexDigit else { return false }
        }
        return true
    }
}
