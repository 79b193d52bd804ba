import Foundation

/// What a store has caught up to of other processes' changes, from the shared file (``SharedState``).
struct FollowedState {
    /// The writers' structure counter when the store was last opened anew.
    var counter: UInt64 = 0
    /// The published length of the active segment last replayed up to.
    var length = 0
    /// The active segment as the shared file named it (nil: it did not describe this store, or named
    /// a segment this store has not got: every change then opens the store anew).
    var segment: UInt32?
    /// The last segment the store read (to its length), when the shared file named none it has: what
    /// its mark stands for then (``CatchingUp/markFollowed(_:)``).
    var lastRead: UInt32?
    /// Applies the records that follow; kept from one catch-up to the next (its map of positions).
    var replayer = Replayer()
    /// The shared file's ``SharedState/Seal`` when the state above was read from it.
    var seal: SharedState.Seal?
}

/// The one way a store catches up with other processes, shared by the two modes whose store others
/// change (``Follower``, ``SharedWriter``): the records appended to the active segment are replayed
/// (``replayTail(_:upTo:)``); any other change opens the store anew from its files (``openAgain(_:publishing:)``).
/// The modes differ in when they catch up and what they hold meanwhile, not in how.
class CatchingUp {
    var followed = FollowedState()
    let followWatch = FollowWatch()

    var watch: FollowWatch? { followWatch }
    /// Another process may change the store under a read: reads go through the queue, which catches up first.
    var readsOffQueue: Bool { false }

    /// Tells ``followWatch`` what the store is caught up to (``followed``).
    func noteFollowed(_ store: DiskStore) {
        followWatch.note(counter: followed.counter, length: followed.length, shared: store.log.folder.shared, seal: followed.seal)
    }

    /// Keeps this process's mark on the shared file at the position it has read to, while anything
    /// observes the store: the writers then keep the segments they retire until it has read them, so
    /// that its observers hear every change in them (``SharedState/markFollowed(_:)``). Unobserved, it
    /// holds nothing back. Moved only once the observers were told of what the store read (a catch-up's
    /// end), never by the open inside it: the segments between are read after that open.
    func markFollowed(_ store: DiskStore) {
        let segment = store.isObserved ? followed.segment ?? followed.lastRead : nil
        store.log.folder.shared?.markFollowed(segment.map { ($0, store.log.segments[$0]?.length ?? 0) })
    }

    /// Opens the store anew from its files: what it knew of them (its index, the memory layers'
    /// copies, a compaction under way) is dropped first. `publishing`: whether the other processes are
    /// told to open it anew too (this open may have changed the files).
    func openAgain(_ store: DiskStore, publishing: Bool) throws {
        // Reads off the queue go on meanwhile (a reader's): none answers from the index half rebuilt.
        try store.rebuildingIndex {
            store.forgetIndex(seed: store.log.folder.storeID)
            followed = FollowedState()
            try store.open(publishing: publishing)
        }
    }

    /// The keys whose values `records` change, which memory must drop: nil (every key) if one clears
    /// the store; none for access records, which another process's reads append and which change no
    /// value (dropping all of memory for them would empty a reader's memory whenever a writer reads).
    static func keysChanged(by records: some Sequence<SegmentRecord>) -> [String]? {
        var keys: [String] = []
        for record in records {
            switch record {
            case .set(let key, _), .remove(let key): keys.append(key)
            case .clear: return nil
            case .access, .batch: break
            }
        }
        return keys
    }

    /// Replays the records another process appended to the followed segment since this store's last
    /// catch-up, up to `length` (the shared file's published length); false if it cannot, and the
    /// caller then opens the store anew: the segment is not the one the store followed, or its bytes
    /// there are not whole, valid records (a process publishes a length only once the records before
    /// it are written whole: anything else is not what it published).
    func replayTail(_ store: DiskStore, upTo length: Int) -> Bool {
        guard let id = followed.segment, let file = store.log.segments[id], length >= file.length else { return false }
        let start = file.length
        guard length > start else { return true }
        guard let bytes = try? FileIO.read(file.fd, at: start, count: length - start, path: file.path),
              bytes.count == length - start else { return false }
        var appended: [(record: SegmentRecord, offset: Int, length: Int)] = []
        let scan = bytes.withUnsafeBytes { raw in
            SegmentFormat.scan(raw, salt: file.salt, from: 0) { record, offset, length in appended.append((record, start + offset, length)) }
        }
        guard scan.validEnd == bytes.count, scan.damaged.isEmpty else { return false }
        let dropped = Self.keysChanged(by: appended.lazy.map(\.record))
        let changes = store.isObserved ? bytes.withUnsafeBytes { raw in
            Self.foreignChanges(in: raw, appended.map { ($0.record, $0.offset - start, $0.length) })
        } : []
        let before = foreignBefore(store, changes)
        var replayer = followed.replayer
        followed.replayer = Replayer() // `replayer` the only reference: its map is changed in place
        store.withIndex { index in
            // Memory first, in the index's hold (see `DiskStore.sharedIndex`): a value read off the
            // queue before this catch-up is then never put back into memory after it.
            if dropped?.isEmpty != true { store.invalidateMemory(dropped) }
            for (record, offset, length) in appended {
                store.log.countDead(of: record, length: length, in: file, index: index)
                if case .set(_, let info) = record { store.earliestExpiry = min(store.earliestExpiry, info.expiry) }
                replayer.visit(record, segment: id, offset: offset, length: length, store: store, index: &index)
            }
        }
        followed.replayer = replayer
        file.length = length
        store.changesSinceDirectory += appended.count
        publishForeign(store, changes, before: before)
        return true
    }
}
