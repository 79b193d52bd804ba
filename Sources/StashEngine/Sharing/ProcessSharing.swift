/// The questions a store asks about other processes, answered once per ``SharingMode``: how it opens
/// and closes, what an operation does before and after its work, how a failed read is taken, and
/// whether a key changed under it. ``SoleWriter``, ``SharedWriter`` and ``Follower`` implement it;
/// the store never asks which one it has.
///
/// Every method runs on the store's queue (the engine's), with the store passed in: the protocol's
/// state (the folder's lock, what the store has caught up to) is the store's, kept here.
protocol ProcessSharing: AnyObject {
    var mode: SharingMode { get }

    /// What the store has caught up to of other processes, readable off the queue (the engine's memory
    /// hits and index reads check it); nil for a sole writer, which nobody else changes.
    var watch: FollowWatch? { get }

    /// Whether the engine reads without the queue (``DiskStore/readOffQueue(_:now:)``): where no other
    /// process changes the store, and for a reader while it is caught up (``FollowWatch/isCurrent``);
    /// not for a writer among several, whose reads may need the folder's lock.
    var readsOffQueue: Bool { get }

    /// Builds the store's index from its files, as its mode opens a store (a follower notes what the
    /// writer had published; a shared writer opens holding the folder's lock).
    func open(_ store: DiskStore) throws

    /// The store's last work before its files close (a writer's access records and key directory).
    func close(_ store: DiskStore)

    /// Runs one operation of the engine's queue: catches up first where other processes may have
    /// changed the store. `readsWithoutLock`: `body` is a read, which a shared writer may run
    /// without the folder's lock (``SharedWriter/runOperation(_:readsWithoutLock:_:)``).
    func runOperation(_ store: DiskStore, readsWithoutLock: Bool, _ body: (DiskStore) -> Void)

    /// What ``runOperation(_:readsWithoutLock:_:)`` does around `body`, for the engine's `async`.
    func beginOperation(_ store: DiskStore)
    func endOperation(_ store: DiskStore)

    /// A call made on the queue from inside an operation (a transformer calling back into the store).
    func enterNestedCall(_ store: DiskStore)

    /// Throws why the operation under way could not take the folder's lock or catch up.
    func checkOperation() throws

    /// A read found its record or value file damaged or gone: what the store does next.
    func readFailed(_ error: any Error, in store: DiskStore) -> AfterFailedRead

    /// Whether `key` no longer has `record` once caught up with other processes (so a failed read of
    /// it is no damage: `stash check` beside a writer).
    func keyChanged(_ key: String, since record: DiskRecord, in store: DiskStore) -> Bool

    /// Whether the operation under way may write (access records, say): not a read a shared writer
    /// runs without the folder's lock.
    var mayWriteNow: Bool { get }

    /// Checks that the shared file readers follow is still at its name (``SoleWriter``); asked when a
    /// write finds that check due (``FolderLossCheck/due()``).
    func checkSharedFile(_ store: DiskStore)

    /// The store's folder was made anew at its path and opened (``DiskStore/reopen()``) inside an operation.
    func adoptReopened(_ fresh: StoreFolder, replacing old: StoreFolder)
}

/// What a store does after a read failed (``ProcessSharing/readFailed(_:in:)``).
enum AfterFailedRead {
    /// Throws the error, changing nothing.
    case fail
    /// Reads again: the store caught up, and another process changed the key meanwhile.
    case readAgain
    /// Throws the error, dropping the key first if its record or file is damaged.
    case dropIfDamaged
}

extension ProcessSharing {
    func runOperation(_ store: DiskStore, readsWithoutLock: Bool, _ body: (DiskStore) -> Void) {
        beginOperation(store)
        body(store)
        endOperation(store)
    }

    func enterNestedCall(_ store: DiskStore) {}
    func checkOperation() throws {}
    var mayWriteNow: Bool { true }
    func readFailed(_ error: any Error, in store: DiskStore) -> AfterFailedRead { .dropIfDamaged }
    func keyChanged(_ key: String, since record: DiskRecord, in store: DiskStore) -> Bool { false }
    func checkSharedFile(_ store: DiskStore) {}
    func adoptReopened(_ fresh: StoreFolder, replacing old: StoreFolder) {}
}
