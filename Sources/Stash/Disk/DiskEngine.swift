import Foundation

/// The one engine behind every storage opened on a directory in this process: its serial queue,
/// its disk index and its observers.
///
/// Opening the same directory twice returns the same engine, so two `Storage`s (or a `Storage`
/// and a `DiskStorage`) on one folder see each other's writes, in one order. Another process is
/// kept out with an exclusive lock on the folder's `lock` file (``StorageError/inUse(directory:)``).
final class DiskEngine: @unchecked Sendable {
    // @unchecked Sendable: `store` is only touched on `queue` (through `sync`/`async`);
    // everything else is immutable or Sendable.
    let directory: String
    let queue: DispatchQueue
    let observers = ObservationCenter()
    /// Mutations submitted through the async API and not run yet (for its memory-hit fast path).
    let pendingAsyncMutations = PendingMutations()
    /// The first opener's ``DiskConfig/maxSize`` and ``DiskConfig/durable``, which every storage of
    /// this folder must share (``open(_:maxSize:durable:)``).
    let maxSize: Int
    let durable: Bool
    private let store: DiskStore
    /// The store's index (``DiskStore/sharedIndex``), which has a lock of its own.
    private let index: Locked<LRUIndex<DiskRecord>>
    /// The store's value files (thread-safe): written off the queue for large values.
    private let values: ValueFiles
    private let groupCommit: GroupCommit
    /// Whether the store was opened read-only.
    let readOnly: Bool
    private let queueID: Int

    private static let queueKey = DispatchSpecificKey<Int>()
    private static let nextQueueID = Locked(0)
    private static let registry = Locked<[String: WeakEngine]>([:], order: .engineRegistry)

    private struct WeakEngine {
        weak var engine: DiskEngine?
    }

    private init(directory: String, readOnly: Bool, maxSize: Int, durable: Bool) throws {
        self.directory = directory
        self.readOnly = readOnly
        self.maxSize = maxSize
        self.durable = durable
        store = try DiskStore(directory: directory, readOnly: readOnly, durable: durable)
        index = store.sharedIndex
        values = store.values
        groupCommit = store.groupCommit
        queueID = Self.nextQueueID.withLock { id in
            id += 1
            return id
        }
        queue = DispatchQueue(label: "Stash.DiskEngine(\((directory as NSString).lastPathComponent))")
        queue.setSpecific(key: Self.queueKey, value: queueID)
        store.observers = observers
        store.isOnOwningQueue = { [queueID] in DispatchQueue.getSpecific(key: Self.queueKey) == queueID }
        store.schedule = { [weak self] work in self?.async(work) }
    }

    deinit {
        // No other reference exists, so touching `store` off the queue is safe here.
        store.close()
        Self.registry.withLock { registry in
            if registry[directory]?.engine == nil { registry[directory] = nil }
        }
    }

    /// The engine for `url`, shared with every other open storage of that folder; creates the folder
    /// unless `readOnly`.
    ///
    /// The first opener's `maxSize` and `durable` hold while the engine is open: two storages with
    /// different limits on one folder would evict each other's data by their own rule, so a second
    /// opener asking for others gets an error instead (see Docs/Architecture.md, "Sharing a folder").
    /// A reader may share a writer's engine; a writer cannot use a read-only one.
    /// - Throws: ``StorageError/configurationConflict(directory:setting:inForce:requested:)``,
    ///   ``StorageError/readOnly(directory:)``.
    static func open(_ url: URL, readOnly: Bool = false, maxSize: Int = 0, durable: Bool = false) throws -> DiskEngine {
        let path = url.standardizedFileURL.path
        if !readOnly { try FileIO.createDirectory(path) }
        let canonical = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return try registry.withLock { registry in
            if let engine = registry[canonical]?.engine {
                if engine.readOnly, !readOnly { throw StorageError.readOnly(directory: canonical) }
                if !readOnly { try engine.checkSettings(maxSize: maxSize, durable: durable) }
                return engine
            }
            let engine = try DiskEngine(directory: canonical, readOnly: readOnly, maxSize: maxSize, durable: durable)
            registry[canonical] = WeakEngine(engine: engine)
            return engine
        }
    }

    /// Throws when a second opener asks for other settings than this engine's.
    private func checkSettings(maxSize: Int, durable: Bool) throws {
        if maxSize != self.maxSize {
            throw StorageError.configurationConflict(directory: directory, setting: "maxSize",
                                                     inForce: String(self.maxSize), requested: String(maxSize))
        }
        if durable != self.durable {
            throw StorageError.configurationConflict(directory: directory, setting: "durable",
                                                     inForce: String(self.durable), requested: String(durable))
        }
    }

    /// The index entry of `key`, from any thread, without the queue.
    ///
    /// Linearizable with the operations on the queue: each applies its change to the index in one
    /// hold of the index's lock (its linearization point for this reader), after it dropped the
    /// keys from memory, and a reader consults memory before the index.
    func record(forKey key: String) -> DiskRecord? {
        index.withLock { $0.peek(key) }
    }

    /// Writes `data` as a new value file on the calling thread, before its write enters the queue,
    /// when the value is kept in a file of its own; nil otherwise (it is packed into a record on the
    /// queue), or when the write will fail anyway. Pass the result to that very write
    /// (``DiskStore/write(_:_:staged:expiry:now:maxSize:durable:storesValuesAsFiles:)``), which ends it.
    func stage(_ key: String, _ data: Data, maxSize: Int, durable: Bool, storesValuesAsFiles: Bool) -> StagedValue? {
        guard !readOnly, DiskStore.needsFile(size: data.count, storesValuesAsFiles: storesValuesAsFiles),
              (try? DiskStore.validate(key: key, size: data.count, maxSize: maxSize)) != nil,
              let file = try? values.write(data, durable: durable) else { return nil }
        return StagedValue(file, size: data.count)
    }

    /// Deletes the value file a write replaced, off the queue (nothing names it any more). A file
    /// that cannot be deleted is an orphan that the next open removes.
    func removeReplaced(_ id: UInt64?) {
        if let id { values.remove(id) }
    }

    /// Returns once a durable write's record (appended up to `position`) is on stable storage,
    /// sharing `fsync`s with concurrent durable writers (``GroupCommit``).
    func waitUntilDurable(_ position: UInt64?) throws {
        if let position { try groupCommit.waitUntilSynced(position) }
    }

    /// Whether the caller runs on this engine's queue (then work runs inline: no deadlock).
    var isOnQueue: Bool { DispatchQueue.getSpecific(key: Self.queueKey) == queueID }

    /// Runs `body` on the serial queue and waits for it; inline when already on the queue.
    ///
    /// Off the queue, the changes `body` committed reach their observers before this returns
    /// (``ObservationCenter/deliver(through:)``); inline, the outer operation's caller delivers them.
    /// An operation that committed none (a read) does not wait for other threads' deliveries.
    func sync<Result>(_ body: (DiskStore) throws -> Result) rethrows -> Result {
        if isOnQueue { return try body(store) }
        var published: (before: UInt64, after: UInt64) = (0, 0)
        defer { if published.after > published.before { observers.deliver(through: published.after) } }
        return try queue.sync {
            published.before = observers.lastPublished
            defer { published.after = observers.lastPublished }
            return try body(store)
        }
    }

    /// Runs `body` on the serial queue, after every operation submitted before it.
    func async(_ body: @escaping @Sendable (DiskStore) -> Void) {
        queue.async { body(self.store) }
    }
}
