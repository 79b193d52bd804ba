import Foundation

/// What a check of a store found (every record and value verified; `stash check` prints it).
public struct DiskCheckReport: Sendable, Equatable {
    /// Segment files read.
    public var segments = 0
    /// Records in them that verified.
    public var records = 0
    /// Entries of the index, each read back and verified (values in files included).
    public var entries = 0
    /// Every damage found: what opening the store found (the store's recovery issues), damaged
    /// byte ranges of segments, and entries whose value did not verify.
    public var problems: [String] = []
    /// The keys whose values are damaged (a repair drops them).
    public var damagedKeys: [String] = []

    /// Whether nothing was found damaged.
    public var isClean: Bool { problems.isEmpty }
}

extension DiskStore {
    /// Reads every record of every segment and every value, verifying each checksum, and changes
    /// nothing. `progress` is called with the entries verified so far and their total.
    package func check(progress: ((Int, Int) -> Void)? = nil) throws -> DiskCheckReport {
        assertOnQueue()
        var report = DiskCheckReport()
        report.problems = recoveryIssues.map(\.description)
        for segment in log.segments.values.sorted(by: { $0.id < $1.id }) {
            guard let bytes = try FileIO.readAll(segment.fd, path: segment.path) else { continue }
            report.segments += 1
            let scan = bytes.withUnsafeBytes { raw in
                SegmentFormat.scan(UnsafeRawBufferPointer(rebasing: raw[0..<min(raw.count, segment.length)]),
                                   salt: segment.salt, from: segment.recordsStart) { _, _, _ in report.records += 1 }
            }
            for range in scan.damaged {
                report.problems.append("bytes \(range.lowerBound)..<\(range.upperBound) of \(segment.path) are damaged")
            }
        }
        let entries = withIndex { $0.entriesOldestFirst }
        for (number, (key, record)) in entries.enumerated() {
            do {
                _ = try log.load(key, record)
            } catch where sharing.keyChanged(key, since: record, in: self) {
                // A reader beside a writer in another process: the key changed since (its old value
                // file replaced, say). Not damage; the state checked is the one caught up to.
            } catch {
                report.damagedKeys.append(key)
                report.problems.append("the value of key \(key.debugDescription) is damaged: \(error)")
            }
            report.entries += 1
            if number % 1024 == 0 || number == entries.count - 1 { progress?(number + 1, entries.count) }
        }
        return report
    }

    /// Drops the entries whose values are damaged, then rewrites the live records into fresh
    /// segments (so damaged bytes are gone too). Returns what ``check(progress:)`` found first.
    package func repair(progress: ((Int, Int) -> Void)? = nil) throws -> DiskCheckReport {
        assertOnQueue()
        try checkWritable()
        let report = try check(progress: progress)
        for key in report.damagedKeys { writer.drop(key) }
        try compactNow()
        recoveryIssues = []
        return report
    }

    /// Compacts every segment now, on the queue.
    ///
    /// A background compaction under way is discarded (its finish, still to come on the queue, finds
    /// the epoch changed and removes its outputs) but still counts as running until then
    /// (`isCompacting` is its own), so no other starts meanwhile; and this one copies only once the
    /// background one's copy is over (``CompactionCopy/copyAlone(in:_:)``): two compactions never overlap.
    func compactNow() throws {
        assertOnQueue()
        try ensureActive()
        try log.flushAccesses()
        epoch += 1
        var live = 0
        withIndex { index in index.forEachValue { live &+= FileNumber.saturating($0.length) } }
        let plan = try compaction.begin(liveBytes: live)
        let (folder, store, segmentLimit) = (log.folder.handle, log.folder.storeID, thresholds.segmentLimit)
        let result = CompactionCopy.copyAlone(in: folder) {
            CompactionCopy.compact(plan.records, seed: plan.seed, victims: plan.victims, into: plan.firstOutput,
                                   count: plan.outputCount, folder: folder, store: store, segmentLimit: segmentLimit)
        }
        if let failure = result.failure {
            for file in result.outputs { file.remove() }
            throw failure
        }
        compaction.finish(result, victims: plan.victims, epoch: epoch)
    }
}
