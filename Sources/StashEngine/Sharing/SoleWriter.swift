/// A writer that keeps the store to itself (``SharingMode/soleWriter``): it holds the folder's lock
/// from open to close, so no other process changes the files under it and an operation needs no
/// catching up. It publishes its changes through the shared file (``SharedState``) for readers in
/// other processes, and keeps that file at its name.
final class SoleWriter: ProcessSharing {
    var mode: SharingMode { .soleWriter }
    var readsOffQueue: Bool { true }
    var watch: FollowWatch? { nil }

    func open(_ store: DiskStore) throws {
        try store.open()
    }

    func close(_ store: DiskStore) {
        defer {
            store.log.folder.shared?.unlock()
            store.log.folder.handle.unlock()
        }
        store.finishWriting()
    }

    func beginOperation(_ store: DiskStore) {}
    func endOperation(_ store: DiskStore) {}

    func runOperation(_ store: DiskStore, readsWithoutLock: Bool, _ body: (DiskStore) -> Void) {
        body(store)
    }

    /// A shared file deleted (or renamed over) while the store is open gets a successor at its name,
    /// so that readers follow this writer again (those on the old file find it gone, and look at the
    /// name; until then they read the files at every call). Checked when the folder is, at most every
    /// ``FolderLossCheck/sharedFileInterval``. (Writers in several processes check at every operation.)
    func checkSharedFile(_ store: DiskStore) {
        let folder = store.log.folder
        guard let old = folder.shared, !old.isAtPath, !folder.handle.isRemoved,
              let fresh = try? SharedState.openForWriting(in: folder.handle, store: folder.storeID) else { return }
        old.retire()
        folder.shared = fresh
        store.log.publishStructure()
    }
}
