import Foundation

/// A store's compaction: when to start one, and how it starts and finishes (its copy runs off the
/// queue, ``CompactionCopy``). A writer in several processes compacts in steps instead
/// (``step()``). Made for each call (``DiskStore/compaction``); the state is the store's
/// (``DiskStore/isCompacting``, ``DiskStore/compactionCycle``, ``DiskStore/epoch``).
struct Compaction {
    let store: DiskStore

    /// Starts a compaction when dead bytes outweigh live ones (and exceed ``Thresholds/compactionMinimum``).
    ///
    /// Every segment so far is merged: the active one is sealed, ids are reserved for the output
    /// below the new active segment's, and the live records are copied, least recently used first,
    /// off the queue (``CompactionCopy/compact(_:seed:victims:into:count:folder:store:segmentLimit:)``). Writes go on meanwhile to the
    /// new active segment, which replays after the output, so a copy never overrides a later write.
    /// Tombstones are not copied: no older segment survives the merge. A writer in several processes
    /// compacts in bounded steps instead, inside its calls (``stepIfNeeded()``).
    func startIfNeeded() {
        guard store.writes, !store.isCompacting, store.log.active != nil else { return }
        if !store.sharing.mode.worksOutsideOperations {
            // Other processes write between this store's operations: the copy is made now, holding the
            // lock, rather than beside later writes it would not see; a bounded part of it in each call.
            stepIfNeeded()
            return
        }
        guard isDue else { return }
        let (dead, total) = store.log.byteCounts
        guard let plan = try? begin(liveBytes: total - dead) else { return }
        store.isCompacting = true
        let (epoch, schedule) = (store.epoch, store.schedule)
        let (folder, storeID, segmentLimit) = (store.log.folder.handle, store.log.folder.storeID, store.thresholds.segmentLimit)
        DispatchQueue.global(qos: .utility).async {
            let result = CompactionCopy.copyAlone(in: folder) {
                CompactionCopy.compact(plan.records, seed: plan.seed, victims: plan.victims, into: plan.firstOutput,
                                       count: plan.outputCount, folder: folder, store: storeID, segmentLimit: segmentLimit)
            }
            schedule { store in
                // Cleared here only (also when the finish discards a stale result): while it is set,
                // no other background compaction starts, and `compactNow` leaves it alone.
                store.isCompacting = false
                store.compaction.finish(result, victims: plan.victims, epoch: epoch)
            }
        }
    }

    /// Seals the active segment and reserves ids for the output below the new active one's (room
    /// for `liveBytes` and one spare); every segment before is an input.
    func begin(liveBytes: Int) throws -> CompactionCopy.Plan {
        store.assertOnQueue()
        let outputCount = UInt32(liveBytes / store.thresholds.segmentLimit + 2)
        let firstOutput = store.log.nextSegmentID
        store.log.nextSegmentID = try SegmentLog.segmentID(after: firstOutput, skipping: outputCount)
        do {
            try store.log.roll()
        } catch {
            store.log.nextSegmentID = firstOutput
            throw error
        }
        let victims = store.log.segments.values.filter { $0.id < firstOutput }.sorted { $0.id < $1.id }
        let (records, seed) = store.withIndex { ($0.recordsForCompaction(), $0.seed) }
        return CompactionCopy.Plan(records: records, seed: seed, victims: victims, firstOutput: firstOutput, outputCount: outputCount)
    }

    /// Points the index at the copies (where it still points at the originals: a key written or
    /// removed meanwhile keeps its newer record), starts a segment whose floor supersedes the inputs,
    /// writes the key directory or removes the old one (it names the inputs), then removes the inputs, oldest first
    /// (also when the directory could be neither written nor removed).
    func finish(_ result: CompactionCopy.Result, victims: [SegmentFile], epoch: Int) {
        store.assertOnQueue()
        // The outputs are published (renamed to segment names, the folder flushed) only here, on the
        // queue of the store that started the compaction and only if nothing made them stale: a store
        // closed meanwhile, a removeAll or a folder made anew leaves unpublished files no replay reads.
        do {
            guard epoch == store.epoch else { throw CancellationError() }
            if let failure = result.failure { throw failure }
            guard result.outputs.first?.folder === store.log.folder.handle else { throw CancellationError() }
            for output in result.outputs { try output.publish() }
            try store.log.folder.handle.sync()
        } catch {
            for file in result.outputs { file.remove() }
            return
        }
        for output in result.outputs { store.log.segments[output.id] = output }
        // Reads during the compaction were recorded against the originals' positions, which replay
        // no longer knows: such entries get an access record for their copy.
        var usedMeanwhile: [SegmentLog.Access] = []
        store.withIndex { index in
            for (from, to) in result.moved {
                guard let (lastAccess, recency) = index.move(from, to: to) else {
                    store.log.markDead(to) // the key was written or removed meanwhile
                    continue
                }
                // Noted with the recency of its last use (which the move kept), so that it takes its
                // place among the uses noted since (``SegmentLog/putPendingAccessesInOrderOfUse()``).
                if lastAccess != from.lastAccess {
                    usedMeanwhile.append(SegmentLog.Access(to, time: lastAccess, recency: recency))
                }
            }
        }
        // Without a key directory the next open takes the order of use from the records, and those uses go
        // out after everything written during the copy: an entry written there after one of them is noted
        // again, in its place among them, or the replay would put it first.
        if let earliest = usedMeanwhile.lazy.map(\.recency).min(), let lastOutput = result.outputs.last?.id, !store.keepsDirectory {
            store.withIndex { index in
                for entry in index.overlaySnapshot.entries where entry.record.segment > lastOutput && entry.recency > earliest {
                    usedMeanwhile.append(SegmentLog.Access(entry.record, time: entry.record.lastAccess, recency: entry.recency))
                }
            }
        }
        store.log.takeOffQueueAccesses() // reads off the queue noted some too
        store.log.pendingAccesses.removeAll { access in victims.contains { $0.id == access.segment } }
        store.log.pendingAccesses += usedMeanwhile
        store.accessesSinceDirectory += usedMeanwhile.count
        // The keys whose records did not verify, where no write replaced them meanwhile, go.
        let damaged = Dictionary(result.damaged.map { (UInt64($0.segment) << 32 | UInt64($0.offset), $0.keyHash) },
                                 uniquingKeysWith: { first, _ in first })
        if !damaged.isEmpty {
            for key in store.withIndex({ $0.keys(at: damaged) }).values { store.writer.drop(key) }
        }
        // The outputs supersede the inputs from one atomic step on: a new active segment whose floor is
        // the first output's number, created once every output is published and flushed. Before it
        // (a crash between two renames, say), the inputs stay in force and replay with whichever outputs
        // are published, which only copy them. Without it the inputs stay, until a later compaction.
        let sealed = store.log.active
        guard let first = result.outputs.first?.id, (try? store.log.roll(floor: first)) != nil else { return }
        // The segment sealed at the start, if nothing was written to it meanwhile, goes: it holds no record.
        if let sealed, sealed.recordBytes == 0 {
            store.log.segments[sealed.id] = nil
            sealed.remove()
        }
        do {
            if store.keepsDirectory {
                try store.writeDirectory()
            } else {
                try store.log.folder.removeDirectory()
                try store.log.folder.handle.sync()
            }
        } catch {
            // Neither written nor removed (a full disk; something that is no file in its place). The
            // inputs go all the same: kept, every later compaction added a copy of the live data, and
            // a full disk could not be freed. An old directory still there names them, so once they
            // are superseded (the floor above) and gone, an open rejects it and replays the segments.
            try? store.log.folder.removeDirectory()
        }
        for victim in victims {
            store.log.segments[victim.id] = nil
            store.log.retire(victim)
        }
        store.log.publishStructure() // readers in other processes open the store anew, without the inputs
    }
}
