import Foundation

/// The segments a writer retired (emptied by a `removeAll`, merged or drained by a compaction,
/// superseded at an open) but left in place, because a process that follows the store had not read
/// them yet (its mark on the shared file: ``SharedState/isNeededByFollowers(_:)``). Superseded, they
/// are never replayed (every open ignores them); a follower reads its observers' changes from them
/// (``CatchingUp/changes(after:through:in:)``). Each goes once no follower needs it: at the writer's
/// next change to the store's files, or its close; what a writer leaves at its close, the next writer's
/// open removes, unreported (``SharedState/retainedThrough``).
///
/// Used on the store's queue and by a `removeAll`'s deletions off it.
///
/// The value files a `removeAll` deletes are kept the same way while a follower may still read a record
/// that names one (in the segment it follows or a later one): a set's event carries its value.
final class RetainedSegments: Sendable {
    private struct Kept {
        var segments = Set<UInt32>()
        /// Value file → the segment of the record that names it.
        var valueFiles: [UInt64: UInt32] = [:]
    }

    private let kept = Locked(Kept())

    /// Removes `segment`'s file, or keeps it while a follower may still read it.
    func retire(_ segment: SegmentFile, shared: SharedState?) {
        guard let shared, shared.isNeededByFollowers(segment.id) else {
            segment.remove()
            return
        }
        kept.withLock { _ = $0.segments.insert(segment.id) }
        shared.noteRetained(segment.id)
    }

    /// Removes value file `id`, named by a record in `segment`, or keeps it while a follower may still
    /// read that record.
    func retireValueFile(_ id: UInt64, namedIn segment: UInt32, folder: FolderHandle, shared: SharedState?) {
        guard let shared, shared.isNeededByFollowers(segment == .max ? segment : segment + 1) else {
            try? folder.remove(ValueFiles.name(of: id))
            return
        }
        kept.withLock { $0.valueFiles[id] = segment }
    }

    /// Removes the files no follower needs any longer.
    func removeUnneeded(in folder: FolderHandle, shared: SharedState?) {
        kept.withLock { kept in
            guard !kept.segments.isEmpty || !kept.valueFiles.isEmpty else { return }
            for id in kept.segments.sorted() where shared?.isNeededByFollowers(id) != true {
                try? folder.remove(SegmentFile.name(of: id))
                kept.segments.remove(id)
            }
            for (id, segment) in kept.valueFiles where shared?.isNeededByFollowers(segment == .max ? segment : segment + 1) != true {
                try? folder.remove(ValueFiles.name(of: id))
                kept.valueFiles[id] = nil
            }
        }
    }
}
