import StashEngine
/// How many mutations submitted through a store's async API have not run yet.
///
/// Reads answer without the store's queue (a memory hit, a read off the queue) only while none is
/// pending: a read must not overtake a write its caller submitted earlier (Contract item 4), whether
/// the read is made through the async API or synchronously. One per store (``DiskEngine``), so every
/// view and every storage of the folder counts the same writes. An atomic word: every read asks.
final class PendingMutations: Sendable {
    private let count = AtomicWord()

    /// Counts a mutation as submitted (before it is handed to the queue).
    func begin() {
        count.increment()
    }

    /// Counts a mutation as done (on the queue, once it has run, before its caller hears of it).
    func end() {
        count.decrement()
    }

    /// Whether no submitted mutation is still waiting to run or running.
    var isEmpty: Bool {
        count.value == 0
    }
}
