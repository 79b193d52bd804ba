import CStashAtomics

/// One 64-bit word that a hot path reads without a lock (an acquire load) and its owner writes
/// under its own lock (a release store), or counts up and down atomically: for a flag or a counter
/// read far more often than it changes.
///
/// `Synchronization.Atomic` would do, but it needs macOS 15 / iOS 18; the package's C atomics
/// (`CStashAtomics`) work on every platform Stash supports.
package final class AtomicWord: @unchecked Sendable {
    // @unchecked Sendable: the word is only ever read and written with atomic operations.
    private let word = UnsafeMutablePointer<UInt64>.allocate(capacity: 1)

    package init(_ value: UInt64 = 0) {
        word.initialize(to: value)
    }

    deinit {
        word.deallocate()
    }

    /// The word (acquire: what was written before the store that wrote it is seen too).
    package var value: UInt64 { stash_load_acquire_u64(word) }

    /// Sets the word (release).
    package func store(_ value: UInt64) {
        stash_store_release_u64(word, value)
    }

    /// Adds 1 to the word, atomically (acquire and release).
    package func increment() {
        _ = stash_fetch_add_u64(word, 1)
    }

    /// Adds 1 to the word, atomically; returns the sum.
    package func incremented() -> UInt64 {
        stash_fetch_add_u64(word, 1) &+ 1
    }

    /// Takes 1 from the word, atomically (acquire and release).
    package func decrement() {
        _ = stash_fetch_sub_u64(word, 1)
    }
}
