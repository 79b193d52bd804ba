import Foundation

extension DiskStore {
    /// Builds the index from the store's files (``StoreOpening``).
    /// - Parameter publishing: Whether readers and writers in other processes are told to open the
    ///   store anew (not when this store opens anew because they changed it).
    package func open(publishing: Bool = true) throws {
        try StoreOpening(store: self).run(publishing: publishing)
    }

    /// The store's folder was removed underneath (and maybe made anew, by this process or another):
    /// opens whatever stands at the path now, anew — creating a new, empty store if nothing does,
    /// taking the lock, reading the marker and the identity, replaying its segments — as if the
    /// store had just been opened. A folder of the user's, or a store another process has open, is
    /// refused (``StorageError/notAStore(directory:)``, ``StorageError/inUse(directory:)``), and
    /// nothing is written to it.
    package func reopen() throws {
        let fresh = try StoreFolder(directory: directory, sharing: sharing.mode)
        sharing.adoptReopened(fresh, replacing: log.folder)
        log.folder = fresh
        log.values.handle = fresh.handle
        try rebuildingIndex {
            forgetIndex(seed: 0)
            recoveryIssues += fresh.issues
            try open()
        }
        didReopen(fresh.handle)
    }

    /// Runs `rebuild`, which empties the index and builds it anew from the files record by record
    /// (``forgetIndex(seed:)`` then ``open(publishing:)``), with ``indexGeneration`` odd throughout,
    /// also if it fails: reads off the queue take no answer from the index meanwhile (a key not
    /// replayed yet is not missing), and a memory layer puts in nothing read before it. Inside a
    /// rebuild already (odd), it only runs `rebuild`: the outer one ends it.
    func rebuildingIndex(_ rebuild: () throws -> Void) rethrows {
        guard indexGeneration.value & 1 == 0 else { return try rebuild() }
        withIndex { _ in indexGeneration.store(indexGeneration.value &+ 1) }
        defer { withIndex { _ in indexGeneration.store(indexGeneration.value &+ 1) } }
        try rebuild()
    }

    /// Drops what the store knows of its files before it opens them anew (``open(publishing:)``): the
    /// index, the memory layers' copies, the segments, and a compaction under way (discarded).
    func forgetIndex(seed: UInt64) {
        epoch += 1
        withIndex { index in
            invalidateMemory(nil) // in the index's hold: see `sharedIndex`
            index.replace(with: KeyDirectory(seed: seed))
        }
        totalSize = 0
        earliestExpiry = .infinity
        directoryBuilder = nil // it stops (its index is gone); the index rebuilt may start another
        log.forgetSegments()
    }
}
