import Foundation

/// The store and the lock that orders its operations (``DiskEngine/turn``), without the engine: what
/// housekeeping queued for later holds instead of the engine, so that it never keeps a released
/// store open (``DiskEngine/asyncUnlessClosed(_:)``).
///
/// A block that held the engine, queued or running when the app released its last storage, made the
/// engine close the store later, on the queue's thread, once the block let it go: after the release
/// returned, with the folder's lock still held and no key directory written (a read-only open right
/// after found none: `CompactionCloseTests`). Holding this instead, a block leaves the close to the
/// release: the engine's deinit closes the store in turn (``closeStore(then:)``), after a block already
/// running, and a block that comes to the turn after it does nothing.
final class StoreTurn: @unchecked Sendable {
    // @unchecked Sendable: `store` and the state below are only touched holding `turn`.
    private let turn: SpinningLock
    /// The engine's count of blocks submitted to its queue that have not run yet (``DiskEngine/queuedBlocks``).
    private let queuedBlocks: AtomicWord
    private let store: DiskStore
    /// Whether the engine closed the store.
    private var isClosed = false
    /// Whether a block of this type runs its body now (on the thread that holds `turn`).
    private var runsBlock = false
    /// What the engine's deinit left to do when it ran inside a block's body (see ``closeStore(then:)``).
    private var closesAfterBlock: (() -> Void)?
    /// Closes asked for from another thread than the turn's holder, counted before they take the turn
    /// (for tests: a block that runs sees here the close waiting behind it).
    let closeRequests = AtomicWord()

    init(turn: SpinningLock, queuedBlocks: AtomicWord, store: DiskStore) {
        self.turn = turn
        self.queuedBlocks = queuedBlocks
        self.store = store
    }

    /// Runs `body` on the store in turn later, on `queue`, after every operation submitted before it
    /// (counted in ``DiskEngine/queuedBlocks`` like the engine's own blocks, so a synchronous call
    /// made meanwhile runs after it); nothing runs once the store is closed.
    func async(on queue: DispatchQueue, _ body: @escaping @Sendable (DiskStore) -> Void) {
        queuedBlocks.increment()
        queue.async { [self] in
            turn.lock()
            if !isClosed {
                runsBlock = true
                body(store)
                runsBlock = false
            }
            let closed = closesAfterBlock
            closesAfterBlock = nil
            if closed != nil { close() }
            turn.unlock()
            queuedBlocks.decrement()
            closed?()
        }
    }

    /// Closes the store in turn, then runs `closed` (the engine's deinit tells the registry): after a
    /// block that runs now, before any that comes later (which then does nothing). Called on the thread
    /// that released the engine's last reference.
    func closeStore(then closed: @escaping () -> Void) {
        if turn.isHeldByCurrentThread {
            // The last reference went inside an operation of this thread (the turn does not nest). A
            // block's body holds no engine, but a callback of the store may take one for a moment (a
            // folder opened anew tells the registry): that body goes on with the store, which closes
            // once it returns. Any other operation runs for a caller that holds the engine: inline.
            if runsBlock { return closesAfterBlock = closed }
            close()
        } else {
            closeRequests.increment()
            turn.withLock(close)
        }
        closed()
    }

    private func close() {
        guard !isClosed else { return }
        isClosed = true
        store.close()
    }
}
