import Foundation
@testable import Stash
@testable import StashEngine

/// Catches `store`'s compactions between their copy (off the queue) and their finish, which the
/// test runs when it likes (``finish(_:)``): writes can be made while the copy is in flight.
final class HeldCompaction: @unchecked Sendable {
    // @unchecked Sendable: `work` is set on the compaction's thread before `ready` is signalled.
    let ready = DispatchSemaphore(value: 0)
    var work: (@Sendable (DiskStore) -> Void)?

    init(_ store: DiskStore) {
        store.schedule = { [self] work in
            self.work = work
            ready.signal()
        }
    }

    /// Starts a real compaction now, unless one is under way: the threshold is lowered and the
    /// active segment's dead bytes raised until every byte counts as dead (the active segment is
    /// sealed and becomes an input, so the raised count goes with it).
    func start(_ store: DiskStore) {
        guard !store.isCompacting, let active = store.log.active else { return }
        let minimum = store.thresholds.compactionMinimum
        store.thresholds.compactionMinimum = 0
        defer { store.thresholds.compactionMinimum = minimum }
        let total = store.log.segments.values.reduce(0) { $0 + $1.length - SegmentFormat.headerLength }
        let dead = store.log.segments.values.reduce(0) { $0 + $1.deadBytes }
        active.deadBytes += max(1, total - dead)
        store.compaction.startIfNeeded()
    }

    /// Waits for the copy of the compaction under way and runs its finish on this thread.
    @discardableResult
    func finish(_ store: DiskStore) -> Bool {
        // Waits for the copy itself (it signals `ready`); the deadline only bounds a lost copy. That
        // copy can be 64 MiB (the segment-limit test): on a loaded machine it took 20 s of the 30 once
        // allowed here, and once more than 30.
        guard ready.wait(timeout: TestDeadline.fromNow) == .success, let work else { return false }
        self.work = nil
        work(store)
        return true
    }
}
