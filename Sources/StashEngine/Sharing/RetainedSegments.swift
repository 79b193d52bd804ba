import Foundation

/// The segments a writer retired (emptied by a `removeAll`, merged or drained by a compaction, left over
/// at an open) and the value files it removed (replaced, removed, emptied) while a process that follows
/// the store had not read them yet (its mark on the shared file: ``SharedState/isNeededByFollowers(segment:)``).
/// A kept segment is renamed out of the store's segments (``SegmentFile/keptSuffix``), so no open ever
/// replays it, whatever becomes of the segments after it (a crash, a full disk); a follower reads its
/// observers' changes from it (``CatchingUp/changes(after:through:in:)``). A kept value file is one no
/// record names. Each goes once no follower needs it: at the writer's next change to the store's files,
/// or its close; what a writer leaves, the next writer's open takes over (``adoptKept(_:in:shared:)``).
///
/// Used on the store's queue and by a `removeAll`'s deletions off it.
final class RetainedSegments: Sendable {
    private struct Kept {
        var segments = Set<UInt32>()
        /// Value file → the position of the record that named it.
        var valueFiles: [UInt64: (segment: UInt32, offset: Int)] = [:]
    }

    private let kept = Locked(Kept())

    /// Removes `segment`'s file, or keeps it under its kept name while a follower may still read it.
    func retire(_ segment: SegmentFile, shared: SharedState?) {
        guard let shared, shared.isNeededByFollowers(segment: segment.id), segment.keep() else {
            segment.remove()
            return
        }
        kept.withLock { _ = $0.segments.insert(segment.id) }
    }

    /// Removes value file `id`, named by the record at `position`, or keeps it while a follower may
    /// still read that record.
    func retireValueFile(_ id: UInt64, namedAt position: (segment: UInt32, offset: Int), folder: FolderHandle, shared: SharedState?) {
        guard let shared, shared.isNeededByFollowers(recordAt: position.segment, offset: position.offset) else {
            try? folder.remove(ValueFiles.name(of: id))
            return
        }
        kept.withLock { $0.valueFiles[id] = position }
    }

    /// Takes over the kept segments a writer before left (`ids`, found by an open): kept on while a
    /// follower may still read them, else removed.
    func adoptKept(_ ids: [UInt32], in folder: FolderHandle, shared: SharedState?) {
        for id in ids {
            if shared?.isNeededByFollowers(segment: id) == true {
                kept.withLock { _ = $0.segments.insert(id) }
            } else {
                try? folder.remove(SegmentFile.name(of: id) + SegmentFile.keptSuffix)
            }
        }
    }

    /// Removes the files no follower needs any longer; every kept file when `freeingSpace` (a full disk
    /// must be freed, whatever a follower then misses).
    func removeUnneeded(in folder: FolderHandle, shared: SharedState?, freeingSpace: Bool = false) {
        kept.withLock { kept in
            guard !kept.segments.isEmpty || !kept.valueFiles.isEmpty else { return }
            for id in kept.segments.sorted() where freeingSpace || shared?.isNeededByFollowers(segment: id) != true {
                try? folder.remove(SegmentFile.name(of: id) + SegmentFile.keptSuffix)
                kept.segments.remove(id)
            }
            for (id, position) in kept.valueFiles
            where freeingSpace || shared?.isNeededByFollowers(recordAt: position.segment, offset: position.offset) != true {
                try? folder.remove(ValueFiles.name(of: id))
                kept.valueFiles[id] = nil
            }
        }
    }
}
