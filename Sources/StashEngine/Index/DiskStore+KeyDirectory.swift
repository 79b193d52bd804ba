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
        let salts = log.segments.mapValues(\.salt)
        let encoded = withIndex { index in
            DirectoryFormat.encode(index.directorySummary(), position: position, store: log.folder.storeID, segmentSalts: salts,
                                   forEach: index.forEachEntry(writing:)).map { ($0, index.count) }
        }
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
        withIndex { index in
            let order = index.order // the same keys: the order goes on, not sorted again
            index = KeyDirectory(seed: log.folder.storeID, base: loaded)
            index.order = order
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
            let header = UsesFormat.header(of: uses, directory: base.header, position: position, nextRecency: index.nextRecency)
            try header.withUnsafeBytes { try log.folder.handle.replaceFile(StoreFolder.usesName, [$0, uses], durable: durable) }
            return true
        }
        // No structure change: the files other processes read are the same (a reader's index is its own,
        // and one that opens later takes the uses); so readers are not made to open the store anew.
        if wrote { (changesSinceDirectory, accessesSinceDirectory) = (0, 0) }
        return wrote
    }

    private func wroteDirectory() {
        changesSinceDirectory = 0
        accessesSinceDirectory = 0
        log.publishStructure()
    }
}
