/// What a store that other processes change (a ``Follower``, a ``SharedWriter``) has caught up to,
/// readable from any thread: the engine's checks outside its queue (memory hits, `existsObject`)
/// compare it with the shared file and only then take the queue to catch up. Written on the queue
/// only, after each catch-up.
///
/// It holds the shared file it noted (a reference, under a lock of its own): a file the store moved
/// away from stays mapped only until no check uses it, so moving never keeps a descriptor or a
/// mapping for the store's life. An old note costs one needless hop to the queue, which checks again
/// there; a new one is stored only once the index holds what it stands for.
package final class FollowWatch: Sendable {
    private struct Noted {
        var counter: UInt64 = 0
        var length = 0
        var shared: SharedState?
        var seal: SharedState.Seal?
    }

    private let noted = Locked(Noted())

    func note(counter: UInt64, length: Int, shared: SharedState?, seal: SharedState.Seal?) {
        noted.withLock { $0 = Noted(counter: counter, length: length, shared: shared, seal: seal) }
    }

    /// Whether the shared file says nothing changed since the last catch-up, and is still the file at
    /// its name, unchanged in place (its ``SharedState/Seal``: one `fstat`); false without one (the
    /// queue then looks for one), and false when the catch-up noted a file that had already lost its
    /// name (deleted between the catch-up's look for it and its `fstat`): such a file never changes
    /// again, so comparing it with itself would call the store current for good while a writer
    /// publishes to the new file at that name.
    var isCurrent: Bool {
        let noted = noted.withLock { $0 }
        guard let shared = noted.shared, let seal = noted.seal else { return false }
        return shared.counter == noted.counter && shared.publishedLength == noted.length && shared.seal == seal
    }
}
