package import Foundation

/// The reads the layers above make without waiting for the queue when they can: index look-ups,
/// and disk reads of a store nobody else changes (``DiskStore/readOffQueue(_:now:)``).
extension DiskEngine {
    /// The index entry of `key`, from any thread, without the queue.
    ///
    /// Linearizable with the operations on the queue: each applies its change to the index in one
    /// hold of the index's lock (its linearization point for this reader), and drops the keys from
    /// memory in that hold, and a reader consults memory before the index. An index being rebuilt
    /// record by record (``DiskStore/indexGeneration`` odd: a reader opening anew after a change a check
    /// made just before it did not see yet) is no answer: the queue's, once it is whole, is.
    package func record(forKey key: String) -> DiskRecord? {
        prepareReadWithoutQueue()
        let found = index.withLock { index -> DiskRecord?? in
            guard store.indexGeneration.value & 1 == 0 else { return nil }
            let record = index.peek(key)
            return index.baseFailed ? nil : Optional(record) // a failed page of the directory: the queue drops it
        }
        if let found { return found }
        return sync { $0.record(forKey: key) }
    }

    /// What a read that answers without the queue (the index, memory hits) does first, so that it
    /// sees what it must: it waits on the queue for the mutations the layers above submitted and the
    /// queue has not run yet (an async write its caller made just before: ``EngineClient/hasPendingMutations``),
    /// and catches up with what another process did if the shared file says it changed the store (two
    /// loads and one `fstat` when it did not; ``FollowWatch/isCurrent``). Nothing else for a sole
    /// writer; the queue's hop does both itself (``ProcessSharing/runOperation(_:readsWithoutLock:_:)``).
    @inline(__always)
    package func prepareReadWithoutQueue() {
        if client.hasPendingMutations { return sync { _ in } }
        guard let followWatch, !followWatch.isCurrent else { return }
        sync { _ in }
    }

    /// The bytes stored for `key`, counted as use: the non-generic core of `DiskStorage`'s reads,
    /// which decode on the calling thread. Read without the queue where the store allows it
    /// (``readOffQueue(_:now:)``), else on the queue (``DiskStore/read(_:now:)``).
    package func read(_ key: String, now: Date) throws -> (data: Data, expiry: Double, path: String?) {
        if let (data, record, path, _) = try readOffQueue(key, now: now) { return (data, record.expiry, path) }
        return try sync(readsWithoutLock: true) { store in
            let (data, record, path) = try store.read(key, now: now)
            return (data, record.expiry, path)
        }
    }

    /// The bytes stored for `key` and the record that holds them, read on the calling thread, in
    /// parallel with other readers, never waiting behind the queue (``DiskStore/readOffQueue(_:now:)``);
    /// nil when this read must be made on the queue: the store is one that other processes change
    /// (``ProcessSharing/readsOffQueue``), or a reader's that has not caught up with the writer's last
    /// change (``FollowWatch/isCurrent``), a mutation submitted before it still waits for the queue
    /// (``EngineClient/hasPendingMutations``), or the read found something to look into there.
    /// `generation` is the index's it was found in, for ``ifCurrent(_:_:generation:_:)``.
    /// - Throws: ``StorageError/notFound(key:)`` when the index has no such key.
    package func readOffQueue(_ key: String, now: Date) throws
        -> (data: Data, record: DiskRecord, path: String?, generation: UInt64)? {
        guard readsOffQueue, !client.hasPendingMutations else { return nil }
        // A reader of a store another process writes: only while it holds every change published
        // (two loads and one `fstat`); the index is noted caught up only once it holds them.
        if let followWatch, !followWatch.isCurrent { return nil }
        let (read, flushDue) = store.readOffQueue(key, now: now)
        if flushDue {
            // Not holding the engine: a storage released before the queue came to it closes at once.
            asyncUnlessClosed { store in
                try? store.log.flushAccesses()
                store.prepareUsesFileIfDue()
            }
        }
        switch read {
        case .found(let data, let record, let generation):
            return (data, record, record.fileID.map(values.path(of:)), generation)
        case .missing:
            throw StorageError.notFound(key: key)
        case .unsure(let memoryHits):
            // Made before this read, which the caller now makes on the queue: counted there first.
            if !memoryHits.isEmpty { sync { $0.recordHits(memoryHits, now: now) } }
            return nil
        }
    }

    /// Runs `body` under the index's lock if `key` still has `record` there, in the index of
    /// `generation` it was read from (a folder made anew places its records where the old one did),
    /// and not otherwise: for a memory layer putting in a value it read off the queue. A write drops
    /// its keys from memory in the same hold of that lock in which it changes them, so a value put in
    /// here is never one that a write has replaced meanwhile. `body` must take no lock but the memory layer's.
    package func ifCurrent(_ key: String, _ record: DiskRecord, generation: UInt64, _ body: () -> Void) {
        index.withLock { index in
            guard store.indexGeneration.value == generation, let current = index.peek(key),
                  current.segment == record.segment, current.offset == record.offset else { return }
            body()
        }
    }
}
