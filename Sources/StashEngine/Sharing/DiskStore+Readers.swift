import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a read-only store last caught up to, from the shared file (``SharedState``).
package struct FollowedState {
    /// The writer's structure counter when the store was last opened anew.
    package var counter: UInt64 = 0
    /// The published length of the active segment last replayed up to.
    package var length = 0
    /// The writer's active segment as the shared file named it (nil: it did not describe this
    /// store, or named a segment the reader has not got: every change then opens the store anew).
    package var segment: UInt32?
    /// Applies the records that follow; kept from one catch-up to the next (its map of positions).
    var replayer = Replayer()
    /// The shared file's ``SharedState/Seal`` when the state above was read from it.
    var seal: SharedState.Seal?
}

/// What a read-only store, or a writer in several processes, has caught up to, readable from any
/// thread: the engine's checks outside its queue (memory hits, `existsObject`) compare it with the
/// shared file and only then take the queue to catch up. Written on the queue only, after each catch-up.
///
/// It holds the shared file it noted (a reference, under a lock of its own): a file the store moved
/// away from stays mapped only until no check uses it, so moving never keeps a descriptor or a
/// mapping for the store's life. An old note costs one needless hop to the queue, which checks again
/// there; a new one is stored only once the index holds what it stands for.
package final class FollowWatch: Sendable {
    private struct Noted {
        package var counter: UInt64 = 0
        package var length = 0
        package var shared: SharedState?
        var seal: SharedState.Seal?
    }

    private let noted = Locked(Noted())

    package func note(counter: UInt64, length: Int, shared: SharedState?, seal: SharedState.Seal?) {
        noted.withLock { $0 = Noted(counter: counter, length: length, shared: shared, seal: seal) }
    }

    /// Whether the shared file says nothing changed since the last catch-up, and is still the file at
    /// its name, unchanged in place (its ``SharedState/Seal``: one `fstat`); false without one (the
    /// queue then looks for one).
    var isCurrent: Bool {
        let noted = noted.withLock { $0 }
        guard let shared = noted.shared else { return false }
        return shared.counter == noted.counter && shared.publishedLength == noted.length && shared.seal == noted.seal
    }
}

extension DiskStore {
    /// A read-only store: catches up with what a writer in another process did since the last call,
    /// so that every write that returned before this call is seen. When nothing changed this is two
    /// loads from the shared file's mapping and one `fstat` of it (its ``SharedState/Seal``); when the
    /// active segment grew, its new records are replayed; when the store's files changed (a segment
    /// started, a compaction, a `removeAll`, a writer opened), the store is opened anew, and so it is
    /// when the shared file was deleted, replaced or written in place by another program (what it says
    /// may then be old: the files decide). Without a shared file (no writer of this version ever
    /// opened the store) it looks for one, which costs a `fstatat`.
    /// - Returns: Whether anything changed.
    @discardableResult
    func catchUp() -> Bool {
        guard readOnly else { return false }
        guard let shared = folder.shared else {
            if let found = SharedState.openForReading(in: folder.handle) {
                folder.shared = found
            } else if !folder.writerIsActive {
                return false
            }
            // Found; or none while a writer is at work (someone deleted it, and the writer makes a new
            // one when it next checks its folder): nothing tells what changed, so the files do, every call.
            openAgainForReading()
            return true
        }
        let seal = shared.seal
        if seal == nil || seal != followed.seal {
            // No longer at its name: the writers publish to the file there now (if any yet).
            if seal == nil { folder.shared = SharedState.openForReading(in: folder.handle) }
            let changes = unseenChanges(after: followed.segment, from: followed.segment.flatMap { segments[$0]?.length } ?? 0)
            let before = foreignBefore(changes)
            openAgainForReading()
            publishForeign(changes, before: before)
            return true
        }
        if shared.counter != followed.counter {
            let changes = unseenChanges(after: followed.segment, from: followed.segment.flatMap { segments[$0]?.length } ?? 0)
            let before = foreignBefore(changes)
            openAgainForReading()
            publishForeign(changes, before: before)
            return true
        }
        let length = shared.publishedLength
        guard length != followed.length else { return false }
        shared.acquire()
        guard replayTail(upTo: length) else {
            openAgainForReading()
            return true
        }
        followed.length = length
        noteFollowed()
        return true
    }

    /// A reader: whether `key` no longer has `record` once caught up (a writer in another process
    /// changed it, or opened the store anew since `record` was read).
    func hasChanged(_ key: String, since record: DiskRecord) -> Bool {
        catchUp()
        return self.record(forKey: key) != record
    }

    /// Reads what the shared file says before a reader's open (so that a change during the open is
    /// caught by the next ``catchUp()``), runs `open`, and records it as caught up to.
    func followOpening(_ open: () throws -> Void) rethrows {
        let shared = folder.shared
        let seal = shared?.seal
        let structure = shared?.structure
        let length = shared?.publishedLength ?? 0
        try open()
        followed = FollowedState(counter: structure?.counter ?? 0, length: length, seal: seal)
        if let shared, let structure, shared.describes(store: folder.storeID),
           let segment = segments[structure.segment], segment.salt == structure.salt, segments.keys.max() == segment.id {
            followed.segment = segment.id
        }
        noteFollowed()
    }

    /// Tells ``followWatch`` what the store is caught up to (``followed``).
    func noteFollowed() {
        followWatch.note(counter: followed.counter, length: followed.length, shared: folder.shared, seal: followed.seal)
    }

    /// Opens the store anew (a reader), as when it was first opened: the writer changed its files.
    /// Tried again while the writer changes them during the attempt (its counter moved), a few times.
    private func openAgainForReading() {
        for attempt in 0..<8 {
            let counter = folder.shared?.counter
            invalidateMemory(nil) // before the index: see `sharedIndex`
            withIndex { $0 = KeyDirectory(seed: folder.storeID) }
            totalSize = 0
            earliestExpiry = .infinity
            segments = [:]
            floor = 0
            nextSegmentID = 1
            hasUnreadSegments = false
            recoveryIssues = folder.issues
            folder.beginOpeningAgain()
            defer { folder.endOpening() }
            do {
                try followOpening { try open() }
            } catch {
                recoveryIssues.append(.corrupted("the store could not be read again after another process changed it: \(error)"))
                followed = FollowedState(counter: counter ?? 0, length: folder.shared?.publishedLength ?? 0, seal: folder.shared?.seal)
                noteFollowed()
                return
            }
            if folder.shared?.counter == counter || attempt == 7 { return }
        }
    }

    /// Replays the records of the writer's active segment from where this store is up to `length`;
    /// false if it cannot (the segment is not the one the shared file named at the last open).
    private func replayTail(upTo length: Int) -> Bool {
        guard let id = followed.segment, let file = segments[id] else { return false }
        let start = file.length
        guard length > start else { return true }
        guard let bytes = try? FileIO.read(file.fd, at: start, count: length - start, path: file.path) else { return false }
        var pending: [(record: SegmentRecord, offset: Int, length: Int)] = []
        let scan = bytes.withUnsafeBytes { raw in
            SegmentFormat.scan(raw, salt: file.salt, from: 0) { record, offset, length in pending.append((record, start + offset, length)) }
        }
        if !pending.isEmpty { invalidateMemory(nil) } // before the index: see `sharedIndex`
        let changes = isObserved ? bytes.withUnsafeBytes { raw in
            Self.foreignChanges(in: raw, pending.map { ($0.record, $0.offset - start, $0.length) })
        } : []
        let before = foreignBefore(changes)
        var replayer = followed.replayer
        followed.replayer = Replayer() // `replayer` the only reference: its map is changed in place
        withIndex { index in
            for (record, offset, length) in pending {
                replayer.visit(record, segment: id, offset: offset, length: length, store: self, index: &index)
            }
        }
        for range in scan.damaged where range.upperBound < bytes.count {
            recoveryIssues.append(.corrupted("bytes \(start + range.lowerBound)..<\(start + range.upperBound) of segment \(SegmentFile.name(of: id)) were damaged; the records there were skipped"))
        }
        followed.replayer = replayer
        file.length = start + scan.validEnd
        publishForeign(changes, before: before)
        return true
    }
}
