import Foundation

/// Keeps a key directory as the store goes (Docs/Architecture.md, "A directory kept as it goes"): on a
/// thread of its own, it applies the index's changes (``DirectoryJournal``) to a ``KeptDirectory``, so
/// that a store that wrote many entries closes by sealing that file and naming it, instead of placing
/// every entry in a new directory (half a second at a million entries).
///
/// It starts (``start(for:)``) once a sole writer's index has ``DiskStore/Thresholds/directoryBuilderMinimum``
/// entries written since its directory: it gives the index a journal, takes a copy of the entries written
/// since the directory (copy on write), and then, off the index's lock, puts those into a new file, the
/// directory's entries after them (a part at a time, each under the lock: they may be changing), and
/// every change since. The store's queue never waits for it, but at close (``finish(at:salts:totalSize:lengthLimit:)``).
///
/// It stops by itself where its directory would no longer be the index's: an index made anew (its journal
/// is gone), a journal that grew too long, a file that cannot grow. The store then writes its directory
/// whole at close, as without one.
final class DirectoryBuilder: @unchecked Sendable {
    // @unchecked Sendable: `kept` and `stopped` are touched on `queue` alone; the index under its lock.
    private let queue = DispatchQueue(label: "Stash.directory-builder", qos: .utility)
    private let index: Locked<KeyDirectory>
    private let folder: FolderHandle
    private let owner: UInt64
    private var kept: KeptDirectory?
    private let isStopped = AtomicWord()
    private static let owners = AtomicWord()

    /// The fewest entries a file has room for (``DiskStore/Thresholds/keptDirectoryCapacity``).
    private let minimumCapacity: Int
    /// The most entries written since the directory a builder starts with (``DiskStore/startDirectoryBuilderIfDue()``).
    static let overlayLimit = 1 << 18
    /// Base slots taken under one hold of the index's lock.
    static let slotsPerHold = 4096

    private init(index: Locked<KeyDirectory>, folder: FolderHandle, minimumCapacity: Int) {
        (self.index, self.folder, self.minimumCapacity, owner) = (index, folder, minimumCapacity, Self.owners.incremented())
    }

    /// Whether it stopped (the store then writes its directory whole, and may start another).
    var stopped: Bool { isStopped.value != 0 }

    /// Starts keeping the directory of `store`'s index.
    static func start(for store: DiskStore) -> DirectoryBuilder {
        let builder = DirectoryBuilder(index: store.sharedIndex, folder: store.log.folder.handle,
                                       minimumCapacity: store.thresholds.keptDirectoryCapacity)
        let (overlay, base) = store.withIndex { index in
            index.journal = DirectoryJournal(owner: builder.owner) { [weak builder] in builder?.wake() }
            return (index.overlaySnapshot, index.base)
        }
        builder.queue.async { builder.build(overlay: overlay, base: base) }
        return builder
    }

    private func wake() {
        queue.async { self.drain() }
    }

    /// Stops it (a store that closes without its directory, or opens its files anew): it does no more
    /// work, and its file and journal go once what it is doing ends.
    func cancel() {
        isStopped.store(1)
        queue.async { self.stop() }
    }

    /// Stops: the file goes (it never had a name), and the index's journal if it is still this builder's.
    private func stop() {
        isStopped.store(1)
        kept = nil
        index.withLock { if $0.journal?.owner == owner { $0.journal = nil } }
    }

    // MARK: Building

    private func build(overlay: KeyTable, base: LoadedDirectory?) {
        let entries = overlay.count + (base?.header.count ?? 0)
        let capacity = max(minimumCapacity, 2 * entries)
        // Keys as long as the overlay's on average (a base's arena length may count keys no slot names, and
        // room a kept one had): a file made larger when they are not.
        let arena = Self.arenaCapacity(for: capacity, bytes: overlay.keyBytes, entries: overlay.count)
        guard let file = KeptDirectory(in: folder, capacity: capacity, arenaCapacity: arena, segmentRoom: Self.segmentRoom) else { return stop() }
        kept = file
        var placed = true
        overlay.forEachEntryBytes { key, record, recency in
            if placed { placed = insert(key: key, record, recency: recency) }
        }
        guard placed else { return stop() }
        if let base, !copy(base) { return stop() }
        drain()
    }

    /// Puts the entries of `base` the index still has into the file, a part at a time, each read under
    /// the index's lock; false if the index is no longer this builder's, or the file could not grow.
    private func copy(_ base: LoadedDirectory) -> Bool {
        var keys: [UInt8] = []
        var entries: [(start: Int, length: Int, record: DiskRecord, recency: UInt64)] = []
        for first in stride(from: 0, to: base.slotCount, by: Self.slotsPerHold) {
            (keys, entries) = ([], [])
            let current = index.withLock { index -> Bool in
                guard index.journal?.owner == owner, index.base === base else { return false }
                for slot in first..<min(base.slotCount, first + Self.slotsPerHold) where base.isOccupied(slot) && !index.isShadowed(slot) {
                    guard let key = base.keyBytes(at: slot), let record = base.record(at: slot) else { continue }
                    entries.append((keys.count, key.count, record, base.recency(at: slot)))
                    keys.append(contentsOf: key)
                }
                return true
            }
            guard current else { return false }
            let placed = keys.withUnsafeBytes { keys in
                entries.allSatisfy { insert(key: UnsafeRawBufferPointer(rebasing: keys[$0.start..<($0.start + $0.length)]), $0.record, recency: $0.recency) }
            }
            guard placed else { return false }
        }
        return true
    }

    /// Applies the changes the index has made since it was last asked, until there are none.
    private func drain() {
        while !stopped, kept != nil {
            let taken = index.withLock { index -> (changes: [DirectoryJournal.Change], keys: [UInt8])? in
                guard index.journal?.owner == owner, index.journal?.overfull == false else { return nil }
                return index.journal?.take()
            }
            guard let taken else { return stop() }
            if taken.changes.isEmpty { return }
            guard apply(taken.changes, keys: taken.keys) else { return stop() }
        }
    }

    /// Applies `changes` (their written keys in `keys`); false if the file could not grow.
    private func apply(_ changes: [DirectoryJournal.Change], keys: [UInt8]) -> Bool {
        keys.withUnsafeBytes { keys in
            for change in changes {
                guard let kept else { return false }
                let found = change.kind == .set && !change.replaces ? nil : kept.find(hash: change.hash, segment: change.segment, offset: change.offset)
                switch change.kind {
                case .set:
                    let key = UnsafeRawBufferPointer(rebasing: keys[change.keyStart..<(change.keyStart + change.keyLength)])
                    guard let record = change.record else { continue }
                    if let found {
                        if kept.replace(found, key: key, record, recency: change.recency) { continue }
                        // No room in the arena for the key anew: the file made larger, and the entry found there again.
                        guard grow(), let again = self.kept?.find(hash: change.hash, segment: change.segment, offset: change.offset),
                              self.kept?.replace(again, key: key, record, recency: change.recency) == true else { return false }
                    } else {
                        guard insert(key: key, record, recency: change.recency) else { return false }
                    }
                case .remove:
                    if let found { kept.remove(found) }
                case .touch:
                    if let found { kept.touch(found, recency: change.recency, time: change.time) }
                case .move:
                    if let found, let record = change.record { kept.move(found, to: record) }
                }
            }
            return true
        }
    }

    /// Adds an entry, making the file larger first if it has no room; false if it could not.
    private func insert(key: UnsafeRawBufferPointer, _ record: DiskRecord, recency: UInt64) -> Bool {
        if kept?.insert(key: key, record, recency: recency) == true { return true }
        return grow() && kept?.insert(key: key, record, recency: recency) == true
    }

    /// Moves every entry into a new file with room for twice as many, and twice their keys' bytes.
    private func grow() -> Bool {
        guard let old = kept else { return false }
        let capacity = max(minimumCapacity, 2 * old.count + 1)
        guard let larger = KeptDirectory(in: folder, capacity: capacity,
                                         arenaCapacity: Self.arenaCapacity(for: capacity, bytes: old.arenaLive, entries: old.count),
                                         segmentRoom: old.segmentRoom) else { return false }
        var moved = true
        old.forEachEntry { key, words in if moved { moved = larger.insert(moving: key, words: words) } }
        guard moved else { return false }
        kept = larger
        return true
    }

    /// Segments a file's list has room for: 4 GiB of records in segments of 64 MiB. A store with more
    /// segments holding live records at close writes its directory whole.
    static let segmentRoom = 64

    /// An arena for `capacity` entries, as long as `bytes` of keys for `entries` entries each on average,
    /// and a half again (keys written again stay there until the file is made anew).
    private static func arenaCapacity(for capacity: Int, bytes: Int, entries: Int) -> Int {
        let perEntry = entries == 0 ? 64 : (bytes + entries - 1) / entries
        return max(1 << 16, capacity * perEntry * 3 / 2) / 8 * 8 // the uses after it aligned
    }

    // MARK: Finishing

    /// At close: applies the last changes, seals the file at `position` and names it the key directory
    /// (in place of the one there), under the index's lock so that no read marks an entry used meanwhile.
    /// Returns false where it has no directory to give (it stopped, its count is not the index's or its
    /// values' bytes not `totalSize`, the store's, or its file is longer than `lengthLimit`, which the next
    /// open would not read): the store writes one whole then.
    /// - Throws: An I/O error from writing or naming the file.
    func finish(at position: DirectoryPosition, salts: [UInt32: UInt64], totalSize: Int, lengthLimit: Int) throws -> Bool {
        try queue.sync {
            defer { isStopped.store(1) }
            guard !stopped, kept != nil else { return false }
            return try index.withLock { index in
                defer { if index.journal?.owner == owner { index.journal = nil } }
                guard index.journal?.owner == owner, index.journal?.overfull == false, let taken = index.journal?.take(),
                      apply(taken.changes, keys: taken.keys), let kept, kept.count == index.count, kept.totalSize == totalSize,
                      kept.fileLength <= lengthLimit,
                      try kept.seal(position: position, store: index.seed, salts: salts, nextRecency: index.nextRecency) else { return false }
                try folder.name(kept.fd, as: StoreFolder.directoryName)
                self.kept = nil
                return true
            }
        }
    }
}
