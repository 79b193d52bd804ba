import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The key directory file as the index's base: read at open, written anew (Docs/Format.md, "Key directory").

extension DiskStore {
    /// Writes the key directory as of now, so that the next open reads it instead of replaying every
    /// record, and takes it as the index's new base (the overlay of changes is folded in).
    /// - Parameters:
    ///   - thenLoad: Whether the store goes on with the new file as its base (not when it is closing).
    ///   - durable: Whether file and folder are flushed. A compaction's directory is: the compaction
    ///     removes the segments an older directory names right after, and a power cut that took the new
    ///     one would leave the next open a whole replay. A closing store's need not be: nothing is
    ///     removed after it, and one a power cut took or tore (it is derived data, verified at open)
    ///     only leaves the next open the records after the directory before it to replay.
    func writeDirectory(thenLoad: Bool = true, durable: Bool = true) throws {
        try log.flushAccesses()
        guard let active = log.active else { return }
        let start = max(0, active.length - DirectoryFormat.tailWindow)
        let tail = try active.read(at: start, length: active.length - start)
        guard tail.count == active.length - start else { throw StorageError.corrupted("the active segment is shorter than the store wrote it") }
        let tailHash = tail.withUnsafeBytes { DirectoryFormat.tailHash($0, at: $0.count) }
        let position = DirectoryPosition(segment: active.id, salt: active.salt, offset: active.length, tailHash: tailHash)
        if !thenLoad, try writeUsesOnly(at: position, durable: durable) { return }
        if !thenLoad, !durable, let builder = directoryBuilder {
            directoryBuilder = nil
            // What the next open reads no more of: a kept file with room to spare may be longer.
            let limit = DirectoryFormat.lengthLimit(segmentBytes: log.segments.values.reduce(0) { $0 + $1.length }, segments: log.segments.count)
            // An error naming it (a link refused, no `/proc` any more) leaves the directory to be written whole.
            if (try? builder.finish(at: position, salts: log.segments.mapValues(\.salt), totalSize: totalSize, lengthLimit: limit)) == true {
                try? log.folder.handle.remove(StoreFolder.usesName) // it names the directory replaced
                return wroteDirectory()
            }
        }
        // Every entry of the base read and checked: a page that fails (the file changed in place since
        // the open) must not leave its entries out of the new directory. The old one goes instead, and
        // the next open replays the segments.
        guard loadBaseWhole()?.checked ?? true else {
            StoreOpening(store: self).discardStaleDirectory()
            throw StorageError.corrupted("the key directory changed on disk while the store had it open; it was removed")
        }
        let salts = log.segments.mapValues(\.salt)
        let encoded = withIndex { index in
            // Reads off the queue go on while the file is written: the index that takes it as its base takes their uses too.
            if thenLoad { index.usesWhileWritten = [] }
            return DirectoryFormat.encode(index.directorySummary(), position: position, store: log.folder.storeID, segmentSalts: salts,
                                          forEach: index.forEachEntry(writing:)).map { ($0, index.count) }
        }
        var replacesIndex = false
        defer { if thenLoad, !replacesIndex { withIndex { $0.usesWhileWritten = nil } } }
        // Nil only if the index handed over other entries than it counted: no directory rather than a wrong one.
        guard let (bytes, count) = encoded else { throw StorageError.corrupted("the key directory was not written: the index's entries did not add up") }
        do {
            try log.folder.handle.replaceFile(StoreFolder.directoryName, [UnsafeRawBufferPointer(bytes)], durable: durable)
        } catch {
            bytes.deallocate()
            throw error
        }
        // The uses of the directory replaced: they name it, so they would never be read again.
        try? log.folder.handle.remove(StoreFolder.usesName)
        wroteDirectory()
        // The bytes just written as the base (not read back: the file may have changed since): the
        // index's heap part goes.
        guard thenLoad else { return bytes.deallocate() }
        guard let loaded = LoadedDirectory(adopting: bytes), loaded.header.count == count else { return }
        replacesIndex = true
        withIndex { index in
            let (order, uses) = (index.order, index.usesWhileWritten ?? [])
            index.replace(with: KeyDirectory(seed: log.folder.storeID, base: loaded))
            index.order = order // the same keys: the order goes on, not sorted again
            // Used after the encoding: used again here, in the order they were (every entry is in the base).
            for use in uses { _ = index.touchBase(hash: use.hash, segment: use.segment, offset: use.offset, time: use.time) }
        }
    }

    /// At close, where only uses changed since the base was read (a process that read), writes the
    /// base's array of uses as a key uses file at `position` (``UsesFormat``) instead of a new directory:
    /// the directory stays as it is, and the next open reads the uses file in the array's place and
    /// replays from `position`. A hash and a write of 16 bytes a slot, no pass per entry. Under the
    /// index lock, so that no read off the queue marks an entry used while the uses are hashed and
    /// written. Returns whether it did.
    private func writeUsesOnly(at position: DirectoryPosition, durable: Bool) throws -> Bool {
        let wrote = try withIndex { index in
            // A directory of a layout before (its uses in its slots) is written anew instead, in this layout.
            guard index.changedOnlyUses, let base = index.base, let uses = base.usesArray else { return false }
            let (header, table) = UsesFormat.frame(of: uses, directory: base.header, position: position, nextRecency: index.nextRecency)
            try header.withUnsafeBytes { header in
                try table.withUnsafeBytes { table in
                    let parts = [header, uses, table]
                    if !durable, let prepared = preparedUses, prepared.directory == base.header.identity,
                       prepared.write(parts, as: StoreFolder.usesName, in: log.folder.handle) { return }
                    try log.folder.handle.replaceFile(StoreFolder.usesName, parts, durable: durable)
                }
            }
            return true
        }
        // No structure change: the files other processes read are the same (a reader's index is its own,
        // and one that opens later takes the uses); so readers are not made to open the store anew.
        if wrote { (changesSinceDirectory, accessesSinceDirectory) = (0, 0) }
        return wrote
    }

    /// Before an operation on the queue: a base read lazily at open (``LoadedDirectory``: the first
    /// open of a sole writer or a reader) is read and checked whole, once, so that no write, removal or
    /// listing acts on an answer that a page failing its check left out. If one fails (the file changed
    /// in place since the open), the directory is dropped (a writer removes it, a reader does not take
    /// it again), and the store opens its files anew from the segments: nothing is lost, and it is
    /// reported. If that open fails (an I/O error), the next operation tries again.
    func checkIndexWhole() {
        guard directoryPages.isPartial else { return }
        if !directoryPages.needsRebuild {
            guard let base = loadBaseWhole(), !base.checked else { return directoryPages.isPartial = false }
            directoryPages.refused = base.identity
            directoryPages.needsRebuild = true
            StoreOpening(store: self).discardStaleDirectory()
        }
        do {
            // A reader opens anew as it does after a writer's change (what it followed is dropped too).
            if let catchingUp = sharing as? CatchingUp {
                try catchingUp.openAgain(self, publishing: false)
            } else {
                try rebuildingIndex {
                    forgetIndex(seed: log.folder.storeID)
                    try open(publishing: writes)
                }
            }
            directoryPages.needsRebuild = false
            // After the open, which starts its report afresh (a reader's).
            recoveryIssues.append(.corrupted("the key directory changed on disk while the store had it open; the segments were replayed whole"))
        } catch {
            // Tried again at the next operation; this one finds the index empty meanwhile.
        }
    }

    /// Reads and checks every page of the base not read yet, a MiB at a time, each under a hold of the
    /// index's lock of its own: reads off the queue wait for one MiB, not for the whole file (~110 MB at
    /// a million entries). Only the queue, where this runs, replaces the base meanwhile. Nil without a
    /// base; else whether every page checked, and which directory it is.
    private func loadBaseWhole() -> (checked: Bool, identity: UInt64)? {
        while true {
            let step = withIndex { index -> (checked: Bool, identity: UInt64, done: Bool)? in
                guard let base = index.base else { return nil }
                let checked = base.loadAll(limit: 256)
                return (checked, base.header.identity, !checked || !base.isPartial)
            }
            guard let step else { return nil }
            if step.done { return (step.checked, step.identity) }
        }
    }

    /// After many entries were written since the key directory, a sole writer starts keeping the next one
    /// as it goes (``DirectoryBuilder``); once per directory written (one that stopped is not started again).
    /// Not where no file can be kept (``KeptDirectory``: Linux, a folder on disk), nor for an index that
    /// already has more than ``DirectoryBuilder/overlayLimit`` entries written since its directory (after
    /// a replay of many records): the builder's copy of them costs the next write a copy of the index's.
    func startDirectoryBuilderIfDue() {
        #if os(Linux)
        guard directoryBuilder == nil, sharing.mode == .soleWriter, !log.folder.handle.isInMemory else { return }
        let overlay = withIndex { $0.overlayCount }
        guard overlay >= thresholds.directoryBuilderMinimum, overlay <= DirectoryBuilder.overlayLimit else { return }
        directoryBuilder = DirectoryBuilder.start(for: self)
        #endif
    }

    /// Once a store that only read since its directory has read enough for its close to write a key uses
    /// file (as ``finishWriting()`` decides), has that file made ready (``PreparedUsesFile``). Asked when
    /// access records are written.
    func prepareUsesFileIfDue() {
        #if os(Linux)
        guard preparedUses == nil, changesSinceDirectory == 0, sharing.mode == .soleWriter, !log.folder.handle.isInMemory else { return }
        // Not `usesArray`, which reads and checks every uses page not read yet: the close does, once.
        let due = withIndex { index -> (length: Int, directory: UInt64)? in
            guard usesAreWorthWriting(count: index.count), index.changedOnlyUses, let base = index.base, base.header.hasPageTable else { return nil }
            let length = UsesFormat.fileLength(slotCount: base.header.slotCount)
            return length >= thresholds.preparedUsesMinimum ? (length, base.header.identity) : nil
        }
        guard let due else { return }
        preparedUses = PreparedUsesFile.start(in: log.folder.handle, length: due.length, directory: due.directory)
        usesFilesMadeReady += 1
        #endif
    }

    /// Lets the uses file made ready go, its blocks given back now (``PreparedUsesFile/discard()``).
    func dropPreparedUses() {
        preparedUses?.discard()
        preparedUses = nil
    }

    private func wroteDirectory() {
        directoryBuilder = nil // one still running stops: the index it kept is folded in
        changesSinceDirectory = 0
        accessesSinceDirectory = 0
        compactionCycle.drainedSinceDirectory = false
        log.publishStructure()
    }
}

/// How a store reads its key directory's pages (``DiskStore/checkIndexWhole()``).
struct DirectoryPagesState {
    /// Whether the next open reads the directory lazily: only an engine's store's first, and not a
    /// shared writer's (which could drop a directory only holding the folder's lock); an open anew
    /// (a catch-up, a folder made anew) is on the queue already and reads it whole.
    var nextOpenIsLazy = false
    /// Whether the base has pages not read yet: set at open, cleared by the next ``DiskStore/checkIndexWhole()``
    /// (true a little longer where the base was replaced meanwhile, by a removeAll or a directory
    /// written: that check then finds no page to read, and clears it).
    var isPartial = false
    /// Whether a page failed and the store has not opened its files anew since.
    var needsRebuild = false
    /// The identity (header hash) of a directory a page of which failed: not taken again by a reader,
    /// which cannot remove it.
    var refused: UInt64?
}
