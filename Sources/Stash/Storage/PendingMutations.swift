import StashEngine
/// How many mutations submitted through a store's async API have not run yet.
///
/// The async functions answer a memory hit without the store's queue only while none is pending:
/// a read must not overtake a write its caller submitted earlier (Contract item 4). One per store
/// (``DiskEngine``), so every view and every storage of the folder counts the same writes.
final class PendingMutations: Sendable {
    private let count = Locked(0)

    /// Counts a mutation as submitted (before it is handed to the queue).
    func begin() {
        count.withLock { $0 += 1 }
    }

    /// Counts a mutation as done (on the queue, once it has run, before its caller hears of it).
    func end() {
        count.withLock { $0 -= 1 }
    }

    /// Whether no submitted mutation is still waiting to run or running.
    var isEmpty: Bool {
        count.withLock { $0 == 0 }
    }
}
