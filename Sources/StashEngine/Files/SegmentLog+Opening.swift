import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// Opening: which segments of the folder are the store's own and current.

extension SegmentLog {
    /// The segments that are this store's and current, oldest first, each opened (header read).
    ///
    /// A segment of another store (its header names another identity or another number than its
    /// file's name, or it has a version-2 header where the store has none) is reported and left
    /// alone, and so is a link, folder or device in a segment's place. A segment numbered below the
    /// floor of a later one (merged by a compaction, emptied by a `removeAll`: a backup restored
    /// beside newer files, or inputs a crash kept from being deleted) is superseded: reported, never
    /// replayed, and removed by a writer. One without a valid header is reported; a writer removes it
    /// only if it is no longer than a header (a crash right after it was created).
    func ownSegments(_ ids: [UInt32], issues recoveryIssues: inout [StorageError]) throws -> [SegmentFile] {
        var opened: [SegmentFile] = []
        for id in ids {
            let name = SegmentFile.name(of: id)
            let segment: SegmentFile?
            do {
                segment = try SegmentFile.open(id, in: folder.handle, writable: writes, wholeFile: false)?.file
            } catch where FileIO.isErrno(error, .ENOENT) {
                continue // deleted since the listing (old segments a removeAll of this process deletes in the background)
            } catch where [.ELOOP, .EISDIR, .ENXIO, .EOPNOTSUPP].contains(where: { FileIO.isErrno(error, $0) }) {
                recoveryIssues.append(.corrupted("\(name) is not a regular file; it was ignored and left alone"))
                hasUnreadSegments = true
                continue
            }
            guard let segment else {
                // Both header copies damaged, or a crash right after the file was created: without
                // its salt no record in it can be verified.
                recoveryIssues.append(.corrupted("segment \(name) has no valid header; its records were dropped"))
                if writes, let size = fileSize(name), size <= SegmentFormat.headerLength {
                    try? folder.handle.remove(name)
                } else {
                    hasUnreadSegments = true
                }
                continue
            }
            opened.append(segment)
        }
        // A header that names another number than the file's name: copied or renamed from elsewhere.
        opened.removeAll { segment in
            guard !segment.path.hasSuffix("/" + SegmentFile.name(of: segment.id)) else { return false }
            recoveryIssues.append(.corrupted("\((segment.path as NSString).lastPathComponent) holds segment \(SegmentFile.name(of: segment.id)) of this or another store (a copy); it was ignored and left alone"))
            return true
        }
        if folder.needsIdentity || folder.isFormat2 { try adoptIdentity(from: opened, issues: &recoveryIssues) }
        var own: [SegmentFile] = []
        for segment in opened {
            if segment.store.map({ $0 == folder.storeID }) ?? (segment.id < folder.legacyBelow) {
                own.append(segment)
            } else {
                recoveryIssues.append(.corrupted("segment \(SegmentFile.name(of: segment.id)) belongs to another store; it was ignored and left alone"))
            }
        }
        floor = own.map(\.floor).max() ?? 0
        // Numbers go on after the store's own segments; a number a file that is not the store's has is
        // passed over when the store gets there (``roll(floor:)``), never reused or overwritten.
        if let last = own.last?.id { nextSegmentID = last == .max ? .max : last + 1 }
        let superseded = own.filter { $0.id < floor }
        // A reader beside a live writer: the writer deletes superseded segments in the background
        // (after a removeAll or a compaction); not damage.
        for segment in superseded where !folder.writerIsActive {
            recoveryIssues.append(.corrupted("segment \(SegmentFile.name(of: segment.id)) is superseded (merged by a compaction or emptied by removeAll); it was ignored\(writes ? " and removed" : "")"))
            if writes { retire(segment) }
        }
        return own.filter { $0.id >= floor }
    }

    /// The identity of a store whose marker was damaged, or says format 2 (no identity), from its
    /// segments: the one most of them carry. A writer writes it into the marker, unless the segments
    /// disagree without a majority (then it is used for this open only, and reported: a segment
    /// copied in must not take a store over). Its version-2 segments stay its own.
    private func adoptIdentity(from opened: [SegmentFile], issues recoveryIssues: inout [StorageError]) throws {
        var counts: [UInt64: (count: Int, oldest: UInt32)] = [:]
        for segment in opened {
            guard let store = segment.store else { continue }
            counts[store, default: (0, segment.id)].count += 1
        }
        // Most segments first; on a tie, the identity of the oldest segment.
        let ranked = counts.sorted { $0.value.count != $1.value.count ? $0.value.count > $1.value.count : $0.value.oldest < $1.value.oldest }
        let isCertain = ranked.count < 2 || ranked[0].value.count > ranked[1].value.count
        if !isCertain {
            recoveryIssues.append(.corrupted("the store's segments name \(ranked.count) identities and its marker none: \(hex(ranked[0].key, digits: 16)) was assumed and the marker left as it is; run `stash check`"))
        }
        let legacy = opened.filter { $0.store == nil }.map(\.id).max().map { $0 == .max ? .max : $0 + 1 } ?? 0
        try folder.adoptIdentity(ranked.first?.key, legacyBelow: legacy, rewrite: isCertain)
    }

    /// The size of the file `name` of the store's folder, nil if it cannot be had.
    private func fileSize(_ name: String) -> Int? {
        folder.handle.status(of: name).flatMap { FileNumber.int($0.st_size) }
    }
}
