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
    private static let registry = Locked<[String: WeakEngine]>([:])

    private struct WeakEngine {
        weak var engine: DiskEngine?
    }

    private init(directory: String, readOnly: Bool) throws {
        self.directory = directory
        self.readOnly = readOnly
        store = try DiskStore(directory: directory, readOnly: readOnly)
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
    static func open(_ url: URL, readOnly: Bool = false) throws -> DiskEngine {
        let path = url.standardizedFileURL.path
        if !readOnly { try FileIO.createDirectory(path) }
        let canonical = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        return try registry.withLock { registry in
            if let engine = registry[canonical]?.engine {
                // A reader may share a writer's engine; a writer cannot use a read-only one.
                if engine.readOnly, !readOnly { throw StorageError.readOnly(directory: canonical) }
                return engine
            }
            let engine = try DiskEngine(directory: canonical, readOnly: readOnly)
            registry[canonical] = WeakEngine(engine: engine)
            return engine
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
    func sync<Result>(_ body: (DiskStore) throws -> Result) rethrows -> Result {
        if isOnQueue { return try body(store) }
        return try queue.sync { try body(store) }
    }

    /// Runs `body` on the serial queue, after every operation submitted before it.
    func async(_ body: @escaping @Sendable (DiskStore) -> Void) {
        queue.async { body(self.store) }
    }
}
