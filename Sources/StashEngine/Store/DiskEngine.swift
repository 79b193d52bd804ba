package import Foundation

/// The one engine behind every storage opened on a directory in this process: its serial queue,
/// its disk index, and the one client (``EngineClient``) of the layers above it.
///
/// Opening the same directory twice returns the same engine, so two storages of any layer on one
/// folder see each other's writes, in one order. Another process that
/// would write is kept out with an exclusive lock on the folder (``StorageError/inUse(directory:)``),
/// unless writers in several processes are allowed: each call then holds that lock while it runs
/// (``SharedWriter``). What a call does about other processes is the store's ``ProcessSharing``'s.)
package final class DiskEngine: @unchecked Sendable {
    // @unchecked Sendable: `store` is only touched holding `turn` (through `sync`/`async`);
    // everything else is immutable or Sendable.
    package let directory: String
    /// The serial queue of the async API: it keeps the order in which operations were submitted.
    /// Every block on it runs holding ``turn``; a synchronous call goes through it only while
    /// blocks are queued (``queuedBlocks``), and otherwise takes ``turn`` directly.
    package let queue: DispatchQueue
    /// The lock every operation holds while it runs, whether it came through the queue or not: it
    /// orders the store's operations, and its holder is "on the queue" (``isOnQueue``).
    let turn = SpinningLock()
    /// Blocks submitted to ``queue`` that have not finished yet: while any is, a synchronous call
    /// waits behind them on the queue, so it runs after every operation submitted before it.
    let queuedBlocks = AtomicWord()
    /// The layers above (memory, observers), made by the first opener (``open(_:sharing:maxSize:durable:mapsSegments:client:)``).
    package let client: any EngineClient
    /// The first opener's ``DiskConfig/maxSize`` and ``DiskConfig/durable``, which every storage of
    /// this folder must share (``open(_:sharing:maxSize:durable:mapsSegments:client:)``).
    package let maxSize: Int
    package let durable: Bool
    /// How the store is shared with other processes (the first opener's choice, or a reader's).
    package let sharing: SharingMode
    let store: DiskStore
    /// The store and ``turn`` without the engine: what housekeeping queued for later holds, so that it
    /// never keeps a released store open (``asyncUnlessClosed(_:)``).
    let storeTurn: StoreTurn
    /// The store's index (``DiskStore/sharedIndex``), which has a lock of its own.
    let index: Locked<KeyDirectory>
    /// The store's value files (thread-safe): written off the queue for large values.
    let values: ValueFiles
    let groupCommit: GroupCommit
    /// What the store has caught up to of other processes, checked outside the queue; nil for a sole
    /// writer, which no other process changes.
    let followWatch: FollowWatch?
    /// Whether reads skip the queue (``ProcessSharing/readsOffQueue``).
    let readsOffQueue: Bool

    private static let registry = Registry()

    /// The folder identity the engine is registered under (see ``Registry``).
    private let registeredIdentity: Locked<FolderIdentity>
    /// The store's folder now (it changes when the store opens its path anew).
    private let folder: Locked<FolderHandle>

    private init(directory: String, identity: FolderIdentity, sharing: SharingMode, maxSize: Int, durable: Bool,
                 mapsSegments: Bool, client: any EngineClient) throws {
        self.directory = directory
        self.client = client
        registeredIdentity = Locked(identity)
        self.sharing = sharing
        self.maxSize = maxSize
        self.durable = durable
        store = try DiskStore(directory: directory, sharing: sharing, durable: durable, mapsSegments: mapsSegments, client: client,
                              lazyDirectory: true)
        storeTurn = StoreTurn(turn: turn, queuedBlocks: queuedBlocks, store: store)
        index = store.sharedIndex
        folder = Locked(store.log.folder.handle, order: .engineFolder)
        values = store.log.values
        groupCommit = store.log.groupCommit
        followWatch = store.sharing.watch
        readsOffQueue = store.sharing.readsOffQueue
        queue = DispatchQueue(label: "Stash.DiskEngine(\((directory as NSString).lastPathComponent))")
        store.isOnOwningQueue = { [turn] in turn.isHeldByCurrentThread }
        // A background compaction hands its result back through this: not holding the engine, so a
        // storage released while the result waits for the queue closes when its release returns (the
        // finish then does nothing; the next open removes its unpublished outputs, as after a close
        // during the copy). Weakly: the store holds this closure, and `storeTurn` holds the store.
        store.schedule = { [weak storeTurn, queue] work in storeTurn?.async(on: queue, work) }
        // A folder made anew at the path has another identity: openers of the path find this engine.
        store.didReopen = { [weak self] handle in
            guard let self, let identity = handle.identity else { return }
            folder.withLock { $0 = handle }
            let old = registeredIdentity.withLock { old in
                defer { old = identity }
                return old
            }
            Self.registry.move(self, from: old, to: identity)
        }
    }

    deinit {
        // Closed in turn: a housekeeping block may be running (it holds the store, not the engine,
        // ``StoreTurn``); it finishes first, and one that comes later does nothing. The lock goes with
        // the store (closed here), before an opener of this folder waiting in the registry goes on.
        let identity = registeredIdentity.withLock { $0 }
        storeTurn.closeStore { Self.registry.closed(identity) }
    }

    /// The engine for `url`, shared with every other open storage of that folder; creates the folder
    /// unless a reader opens it (``SharingMode/follower``).
    ///
    /// A folder is known by what it is (its device and inode), not by how it was named: a symbolic
    /// link, a bind mount, or another spelling on a case- or normalization-insensitive file system
    /// reaches the same engine. An engine of the folder that is being closed (its last storage
    /// released on another thread) is waited for, so opening never races a close into ``StorageError/inUse(directory:)``.
    ///
    /// The first opener's `maxSize` and `durable` hold while the engine is open: two storages with
    /// different limits on one folder would evict each other's data by their own rule, so a second
    /// opener asking for others gets an error instead (see Docs/Architecture.md, "Sharing a folder").
    /// A reader may share a writer's engine; a writer cannot use a reader's. `mapsSegments` false reads
    /// segments with `pread` alone (``SegmentLog/mapsSegments``); the first opener decides.
    /// - Throws: ``StorageError/configurationConflict(directory:setting:inForce:requested:)``,
    ///   ``StorageError/readOnly(directory:)``.
    package static func open(_ url: URL, sharing: SharingMode = .soleWriter, maxSize: Int = 0, durable: Bool = false,
                             mapsSegments: Bool = true, client makeClient: () -> any EngineClient) throws -> DiskEngine {
        let path = url.standardizedFileURL.path
        let inMemory = MemoryVolume.isMemoryPath(path)
        if inMemory, sharing != .soleWriter {
            // Only this process can see a memory folder: there are no other processes to share it with.
            throw FileIO.error("open", path, code: ENOTSUP)
        }
        if sharing.writes { try FileIO.createDirectory(path) }
        let canonical = inMemory ? path : URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        guard let identity = FolderIdentity(path: canonical) else { throw FileIO.error("open", canonical, code: ENOENT) }
        let engine = try registry.engine(for: identity, directory: canonical, writes: sharing.writes) {
            try DiskEngine(directory: canonical, identity: identity, sharing: sharing, maxSize: maxSize, durable: durable,
                           mapsSegments: mapsSegments, client: makeClient())
        }
        guard sharing.writes else { return engine }
        if !engine.sharing.writes { throw StorageError.readOnly(directory: engine.directory) }
        try engine.checkSettings(maxSize: maxSize, durable: durable, sharing: sharing)
        if !engine.isRegistered(as: identity) {
            // The engine's folder was removed and this open made the path anew: it takes the new folder now.
            _ = try engine.sync { try $0.ensureActive(checkingNow: true) }
        }
        return engine
    }

    private func isRegistered(as identity: FolderIdentity) -> Bool {
        registeredIdentity.withLock { $0 == identity }
    }

    /// Whether this is a writer whose folder was removed underneath: it opens the folder made anew at
    /// its path on its next write, and a writer opening that path shares it.
    var isOrphanedWriter: Bool {
        sharing.writes && folder.withLock { $0 }.isRemoved
    }

    /// Throws when a second opener asks for other settings than this engine's.
    private func checkSettings(maxSize: Int, durable: Bool, sharing: SharingMode) throws {
        if sharing != self.sharing {
            throw StorageError.configurationConflict(directory: directory, setting: "allowsWritersInOtherProcesses",
                                                     inForce: String(self.sharing == .sharedWriter), requested: String(sharing == .sharedWriter))
        }
        if maxSize != self.maxSize {
            throw StorageError.configurationConflict(directory: directory, setting: "maxSize",
                                                     inForce: String(self.maxSize), requested: String(maxSize))
        }
        if durable != self.durable {
            throw StorageError.configurationConflict(directory: directory, setting: "durable",
                                                     inForce: String(self.durable), requested: String(durable))
        }
    }

    /// Stores `data` for `key`: the one write path of every layer above.
    ///
    /// The steps, in this order: a value kept in a file of its own is written on the calling thread,
    /// in parallel with other writers (staged); the queue commits the record that names it, the
    /// writer's memory layer (`memoryLayer`) taking the value (`putInMemory`) as the index does, and
    /// runs `onCommit` there; off the queue, a durable write waits
    /// until its record is on stable storage; only then does the value file it replaced go, so a
    /// power cut never leaves a durable write's key without a value.
    /// - Throws: The write's error; or, once committed, a failed `fsync` or a trim that could not
    ///   hold `maxSize`.
    package func write(_ key: String, _ data: Data, expiry: Date, now: Date, config: WriteSettings,
                       memoryLayer: AnyObject? = nil, putInMemory: (_ path: String?) -> Void = { _ in },
                       onCommit: (DiskStore, _ path: String?) -> Void = { _, _ in }) throws {
        let staged = stage(key, data, config: config)
        let outcome = try sync { store in
            let outcome = try store.writer.write(key, data, staged: staged, expiry: expiry, now: now, maxSize: config.maxSize,
                                          durable: config.durable, storesValuesAsFiles: config.storesValuesAsFiles,
                                          memoryLayer: memoryLayer, putInMemory: putInMemory)
            onCommit(store, outcome.path)
            return outcome
        }
        // A failed fsync keeps the replaced file: the old record may be what a power cut leaves, and
        // the next open removes whichever file no record names.
        if let position = outcome.syncPosition { try groupCommit.waitUntilSynced(position) }
        outcome.replaced?.remove()
        if let trimError = outcome.trimError { throw trimError }
    }

    /// Applies `changes` all or none, with one commit (``WritePath/writeBatch(_:now:maxSize:durable:storesValuesAsFiles:)``);
    /// `onCommit` runs on the queue with each change's value file path. As for ``write(_:_:expiry:now:config:memoryLayer:putInMemory:onCommit:)``,
    /// a durable batch returns once it is on stable storage, and only then go the value files it replaced.
    package func writeBatch(_ changes: [DiskBatchChange], now: Date, config: WriteSettings,
                    onCommit: (DiskStore, _ paths: [String?]) -> Void = { _, _ in }) throws {
        let outcome = try sync { store in
            let outcome = try store.writer.writeBatch(changes, now: now, maxSize: config.maxSize, durable: config.durable,
                                               storesValuesAsFiles: config.storesValuesAsFiles)
            onCommit(store, outcome.paths)
            return outcome
        }
        if let position = outcome.syncPosition { try groupCommit.waitUntilSynced(position) }
        for file in outcome.replaced { file.remove() }
        if let trimError = outcome.trimError { throw trimError }
    }

    /// Writes `data` as a new value file on the calling thread, before its write enters the queue,
    /// when the value is kept in a file of its own; nil otherwise (it is packed into a record on the
    /// queue), or when the write will fail anyway (the queue then writes it, or reports why).
    private func stage(_ key: String, _ data: Data, config: WriteSettings) -> StagedValue? {
        // Not with writers in other processes: one of them opening the store anew meanwhile would take
        // the file for a crash's leftover (no record names it yet) and remove it.
        guard sharing.worksOutsideOperations, DiskStore.needsFile(size: data.count, storesValuesAsFiles: config.storesValuesAsFiles),
              (try? DiskStore.validate(key: key, size: data.count, maxSize: config.maxSize)) != nil else { return nil }
        let folder = values.handle
        guard let file = try? values.write(data, durable: config.durable) else { return nil }
        return StagedValue(file, folder: folder, size: data.count)
    }

    /// Removes `key`; a durable removal returns once its tombstone is on stable storage, and only
    /// then is the value file it named removed.
    package func remove(_ key: String, durable: Bool) throws {
        let (position, files) = try sync { try $0.writer.remove(key, durable: durable) }
        if let position, durable { try groupCommit.waitUntilSynced(position) }
        for file in files { file.remove() }
    }
}
