import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a read-only store last caught up to, from the shared file (``SharedState``).
struct FollowedState {
    /// The writer's structure counter when the store was last opened anew.
    var counter: UInt64 = 0
    /// The published length of the active segment last replayed up to.
    var length = 0
    /// The writer's active segment as the shared file named it (nil: it did not describe this
    /// store, or named a segment the reader has not got: every change then opens the store anew).
    var segment: UInt32?
    /// Applies the records that follow; kept from one catch-up to the next (its map of positions).
    var replayer = Replayer()
}

/// The counter and length a read-only store has caught up to, readable from any thread: the
/// engine's checks outside its queue (memory hits, `existsObject`) compare them with the shared file
/// and only then take the queue to catch up. Written on the queue only, after each catch-up.
///
/// Each value is one aligned 8-byte word, the shared file's mapping included (its address, 0 until
/// the store has one; a mapping lives as long as the store): a thread that reads one while the queue
/// writes it sees the old or the new value, never a mix (as for the shared file itself). An old value
/// costs one needless hop to the queue, which checks again there; a new one is stored only once the
/// index holds what it stands for (the index's lock orders the rest).
final class FollowWatch: @unchecked Sendable {
    // @unchecked Sendable: see above.
    private let words = UnsafeMutablePointer<UInt64>.allocate(capacity: 6)

    init() {
        words.initialize(repeating: 0, count: 6)
    }

    deinit {
        words.deallocate()
    }

    func note(counter: UInt64, length: Int, shared: SharedState?) {
        words[0] = counter
        words[1] = UInt64(length)
        words[2] = UInt64(UInt(bitPattern: shared?.address))
    }

    /// For writers in several processes: the shared file's descriptor, so that ``isInPlace`` tells
    /// whether it still has a name (the store keeps every shared file it used open while it lives).
    func note(sharedFile shared: SharedState) {
        words[3] = UInt64(UInt32(bitPattern: shared.fd))
    }

    /// Whether the shared file noted still has a name (one `fstat`): a process that opened the store
    /// after it was deleted publishes to another file. An old value (the store moved to another file
    /// meanwhile) gives false, which costs a hop to the queue.
    var isInPlace: Bool {
        SharedState.isLinked(Int32(bitPattern: UInt32(truncatingIfNeeded: words[3])))
    }

    /// Whether the shared file says nothing changed since the last catch-up; false without one (the
    /// queue then looks for one).
    @inline(__always)
    var isCurrent: Bool {
        guard let address = UnsafeRawPointer(bitPattern: UInt(words[2])) else { return false }
        return SharedState.counter(at: address) == words[0] && SharedState.length(at: address) == words[1]
    }
}

extension DiskStore {
    /// A read-only store: catches up with what a writer in another process did since the last call,
    /// so that every write that returned before this call is seen. When nothing changed this is two
    /// loads from the shared file's mapping (no system call); when the active segment grew, its new
    /// records are replayed; when the store's files changed (a segment started, a compaction, a
    /// `removeAll`, a writer opened), the store is opened anew. Without a shared file (no writer of
    /// this version ever opened the store) it looks for one, which costs a `fstatat`.
    /// - Returns: Whether anything changed.
    @discardableResult
    func catchUp() -> Bool {
        guard readOnly else { return false }
        guard let shared = folder.shared else {
            guard let found = SharedState.openForReading(in: folder.handle) else { return false }
            folder.shared = found
            openAgainForReading()
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
        followWatch.note(counter: followed.counter, length: length, shared: folder.shared)
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
        let structure = shared?.structure
        let length = shared?.publishedLength ?? 0
        try open()
        followed = FollowedState(counter: structure?.counter ?? 0, length: length)
        if let shared, let structure, shared.describes(store: folder.storeID),
           let segment = segments[structure.segment], segment.salt == structure.salt, segments.keys.max() == segment.id {
            followed.segment = segment.id
        }
        followWatch.note(counter: followed.counter, length: length, shared: folder.shared)
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
            folder.refreshWriterIsActive()
            do {
                try followOpening { try open() }
            } catch {
                recoveryIssues.append(.corrupted("the store could not be read again after another process changed it: \(error)"))
                followed = FollowedState(counter: counter ?? 0, length: folder.shared?.publishedLength ?? 0)
                followWatch.note(counter: followed.counter, length: followed.length, shared: folder.shared)
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
