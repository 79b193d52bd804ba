import Foundation

/// Durable writes share `fsync`s: each appends its record on the store's queue, then waits off the
/// queue until an `fsync` that started after its append has finished. Whoever finds no `fsync`
/// running starts one for everything appended so far; the writers that arrive meanwhile wait for the
/// next one. So N concurrent durable writers pay about two `fsync`s, not N, and the queue never waits
/// for the disk.
package final class GroupCommit: @unchecked Sendable {
    // @unchecked Sendable: every field is touched only while holding `condition`.
    // `@exclusivity(unchecked)` on what every write changes: see `DiskStore`.
    private let condition = NSCondition()
    /// Bytes appended to the store's segments since it opened, and how many of them are synced.
    @exclusivity(unchecked) private var appended: UInt64 = 0
    @exclusivity(unchecked) private var synced: UInt64 = 0
    /// The end of the last durable writer's append: sealing a segment syncs it only up to there, so a
    /// store without durable writes never calls `fsync`.
    @exclusivity(unchecked) private var durableEnd: UInt64 = 0
    @exclusivity(unchecked) private var syncing = false
    /// How many `fsync`s group commit has made; for tests.
    package private(set) var syncCount = 0
    @exclusivity(unchecked) private var file: SegmentFile?

    /// Counts `count` bytes appended to `file` (the active segment); returns the position a durable
    /// writer waits for. Called on the store's queue.
    func noteAppend(_ count: Int, to file: SegmentFile, durable: Bool) -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        self.file = file
        appended += UInt64(count)
        if durable { durableEnd = appended }
        return appended
    }

    /// Switches to a new active segment, first syncing the old one if a durable write in it is not
    /// synced yet (its writer may still be waiting). Called on the store's queue.
    func switchFile(to newFile: SegmentFile?) throws {
        condition.lock()
        defer { condition.unlock() }
        while syncing { condition.wait() }
        if synced < durableEnd, let file {
            try file.sync()
            synced = appended
            condition.broadcast()
        }
        file = newFile
    }

    /// Returns once everything appended up to `position` is on stable storage. Called off the queue.
    /// - Throws: The `fsync` error, if the `fsync` that was to cover `position` failed.
    func waitUntilSynced(_ position: UInt64) throws {
        condition.lock()
        defer { condition.unlock() }
        while synced < position {
            if syncing {
                condition.wait()
                continue
            }
            guard let file else { return }
            syncing = true
            let target = appended
            condition.unlock()
            var failure: (any Error)?
            do { try file.sync() } catch { failure = error }
            condition.lock()
            syncCount += 1
            syncing = false
            if failure == nil { synced = max(synced, target) }
            condition.broadcast()
            if let failure { throw failure }
        }
    }
}
