import Foundation

extension DiskStore {
    /// Starts a compaction when dead bytes outweigh live ones (and exceed ``Thresholds/compactionMinimum``).
    ///
    /// Every segment so far is merged: the active one is sealed, ids are reserved for the output
    /// below the new active segment's, and the live records are copied, least recently used first,
    /// off the queue (``CompactionCopy/compact(_:victims:into:count:folder:store:segmentLimit:)``). Writes go on meanwhile to the
    /// new active segment, which replays after the output, so a copy never overrides a later write.
    /// Tombstones are not copied: no older segment survives the merge. A writer in several processes
    /// compacts in bounded steps instead, inside its calls (``stepCompactionIfNeeded()``).
    func startCompactionIfNeeded() {
        guard writes, !isCompacting, active != nil else { return }
        if !sharing.mode.worksOutsideOperations {
            // Other processes write between this store's operations: the copy is made now, holding the
            // lock, rather than beside later writes it would not see; a bounded part of it in each call.
            stepCompactionIfNeeded()
            return
        }
        var (dead, total) = (0, 0)
        for segment in segments.values {
            dead += segment.deadBytes
            total += segment.recordBytes
        }
        guard dead >= thresholds.compactionMinimum, dead * 2 > total else { return }
        guard let plan = try? beginCompaction(liveBytes: total - dead) else { return }
        isCompacting = true
        let epoch = epoch
        let (folder, store, segmentLimit) = (folder.handle, folder.storeID, thresholds.segmentLimit)
        let schedule = schedule
        DispatchQueue.global(qos: .utility).async {
            let result = CompactionCopy.copyAlone(in: folder) {
                CompactionCopy.compact(plan.entries, victims: plan.victims, into: plan.firstOutput, count: plan.outputCount,
                             folder: folder, store: store, segmentLimit: segmentLimit)
            }
            schedule { store in
                // Cleared here only (also when the finish discards a stale result): while it is set,
                // no other background compaction starts, and `compactNow` leaves it alone.
                store.isCompacting = false
                store.finishCompaction(result, victims: plan.victims, epoch: epoch)
            }
        }
    }

    /// Seals the active segment and reserves ids for the output below the new active one's (room
    /// for `liveBytes` and one spare); every segment before is an input.
    func beginCompaction(liveBytes: Int) throws -> CompactionCopy.Plan {
        assertOnQueue()
        let outputCount = UInt32(liveBytes / thresholds.segmentLimit + 2)
        let firstOutput = nextSegmentID
        nextSegmentID = try Self.segmentID(after: firstOutput, skipping: outputCount)
        do {
            try roll()
        } catch {
            nextSegmentID = firstOutput
            throw error
        }
        let victims = segments.values.filter { $0.id < firstOutput }.sorted { $0.id < $1.id }
        return CompactionCopy.Plan(entries: withIndex { $0.entriesOldestFirst }, victims: victims, firstOutput: firstOutput,
                              outputCount: outputCount)
    }

    /// Points the index at the copies (where it still points at the originals: a key written or
    /// removed meanwhile keeps its newer record), starts a segment whose floor supersedes the inputs,
    /// writes the key directory or removes the old one (it names the inputs), then removes the inputs, oldest first
    /// (also when the directory could be neither written nor removed).
    func finishCompaction(_ result: CompactionCopy.Result, victims: [SegmentFile], epoch: Int) {
        assertOnQueue()
        // The outputs are published (renamed to segment names, the folder flushed) only here, on the
        // queue of the store that started the compaction and only if nothing made them stale: a store
        // closed meanwhile, a removeAll or a folder made anew leaves unpublished files no replay reads.
        do {
            guard epoch == self.epoch else { throw CancellationError() }
            if let failure = result.failure { throw failure }
            guard result.outputs.first?.folder === folder.handle else { throw CancellationError() }
            for output in result.outputs { try output.publish() }
            try folder.handle.sync()
        } catch {
            for file in result.outputs { file.remove() }
            return
        }
        for output in result.outputs { segments[output.id] = output }
        // Reads during the compaction were recorded against the originals' positions, which replay
        // no longer knows: such entries get an access record for their copy.
        var usedMeanwhile: [DiskRecord] = []
        withIndex { index in
            for (key, from, to) in result.moved {
                let current = index.peek(key)
                if let current, current.segment == from.segment, current.offset == from.offset {
                    _ = index.update(key) { record in
                        (record.segment, record.offset, record.length) = (to.segment, to.offset, to.length)
                    }
                    if current.lastAccess != from.lastAccess {
                        var moved = to
                        moved.lastAccess = current.lastAccess
                        usedMeanwhile.append(moved)
                    }
                } else {
                    markDead(to) // the key was written or removed meanwhile
                }
            }
        }
        pendingAccesses.removeAll { access in victims.contains { $0.id == access.segment } }
        for record in usedMeanwhile { noteAccess(record, time: record.lastAccess) }
        for (key, from) in result.damaged {
            let current = record(forKey: key)
            if current?.segment == from.segment, current?.offset == from.offset { drop(key) }
        }
        // The outputs supersede the inputs from one atomic step on: a new active segment whose floor is
        // the first output's number, created once every output is published and flushed. Before it
        // (a crash between two renames, say), the inputs stay in force and replay with whichever outputs
        // are published, which only copy them. Without it the inputs stay, until a later compaction.
        let sealed = active
        guard let first = result.outputs.first?.id, (try? roll(floor: first)) != nil else { return }
        // The segment sealed at the start, if nothing was written to it meanwhile, goes: it holds no record.
        if let sealed, sealed.recordBytes == 0 {
            segments[sealed.id] = nil
            sealed.remove()
        }
        do {
            if withIndex({ $0.count }) >= thresholds.directoryMinimum {
                try writeDirectory()
            } else {
                try folder.handle.remove(StoreFolder.directoryName)
                try folder.handle.sync()
            }
        } catch {
            // Neither written nor removed (a full disk; something that is no file in its place). The
            // inputs go all the same: kept, every later compaction added a copy of the live data, and
            // a full disk could not be freed. An old directory still there names them, so once they
            // are superseded (the floor above) and gone, an open rejects it and replays the segments.
            try? folder.handle.remove(StoreFolder.directoryName)
        }
        for victim in victims {
            segments[victim.id] = nil
            victim.remove()
        }
        publishStructure() // readers in other processes open the store anew, without the inputs
    }
}
