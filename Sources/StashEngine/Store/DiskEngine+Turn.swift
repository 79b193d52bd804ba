import Foundation

// How an operation gets its turn on the store: every operation runs holding the engine's `turn`
// (a lock that spins briefly before it parks), and the async API's serial queue keeps the order in
// which operations were submitted. A synchronous call takes the turn directly while nothing waits on
// the queue, so two threads writing at once hand the store to each other in a few microseconds
// instead of parking on a contended `DispatchQueue.sync`, which on Linux cost each call a futex
// wait, a wake and a context switch (Docs/Architecture.md, "Threads and queues").

extension DiskEngine {
    /// Whether the caller runs inside an operation of this engine, on the thread that holds its turn
    /// (then a call runs inline: no deadlock). "On the queue" in the rest of the engine's words.
    var isOnQueue: Bool { turn.isHeldByCurrentThread }

    /// Runs `body` as an operation of the store and waits for it; inline when already inside one.
    ///
    /// It runs after every operation submitted before it (Contract item 4): after every async
    /// block queued before it, and then in turn with the other synchronous calls. Off the queue,
    /// the changes `body` committed reach their observers before this returns
    /// (``EngineClient/deliver(through:)``); inline, the outer operation's caller delivers them.
    /// An operation that committed none (a read) does not wait for other threads' deliveries.
    ///
    /// Generic only in this thin shell, which is inlined into each caller (and so specialised for its
    /// result type there): the hop itself is ``run(readsWithoutLock:_:)``, which is not generic. The generic
    /// `DispatchQueue.sync<T>` of swift-corelibs-libdispatch is not specialised for the caller's type
    /// (it lives in another module) and cost ~1,300 instructions more per call than the
    /// `sync(execute: () -> Void)` that ``run(readsWithoutLock:_:)`` uses when it takes the queue (see
    /// Docs/Architecture.md, "The hot path").
    ///
    /// `readsWithoutLock`: a read (``DiskStore/read(_:now:)``) of a store shared with writers in other
    /// processes runs without the store's lock when the shared file says nothing changed since this
    /// process's last call, and again holding it if the read finds it needs it (``SharedWriter``).
    @inline(__always)
    package func sync<Result, Failure: Error>(readsWithoutLock: Bool = false,
                                      _ body: (DiskStore) throws(Failure) -> Result) throws(Failure) -> Result {
        var result: Result?
        var failure: Failure?
        run(readsWithoutLock: readsWithoutLock) { store in
            (result, failure) = (nil, nil) // run again after a read without the lock that needed it
            do throws(Failure) {
                result = try body(store)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return result.unsafelyUnwrapped // `run` ran `body`, which returned or threw
    }

    /// The non-generic hop under ``sync(readsWithoutLock:_:)``: runs `body` holding the turn (inline
    /// when this thread holds it already, so a call from inside a transformer or another operation
    /// never deadlocks) and delivers what it committed to observers once it let the turn go.
    ///
    /// The turn is taken directly when no async block is queued, and on the queue, behind the queued
    /// blocks, otherwise: a block submitted before this call was counted in ``queuedBlocks`` before
    /// it was submitted and is counted out only once it has run, so a count of 0 read here means
    /// every block submitted before this call has run.
    ///
    /// What the call does about other processes is the store's ``ProcessSharing``'s: a reader catches
    /// up first, so it sees every write another process made before this call (Contract item 11);
    /// with writers in other processes the call holds the folder's lock and catches up first (a read,
    /// `readsWithoutLock`, may skip both: ``SharedWriter``).
    @inline(never)
    private func run(readsWithoutLock: Bool = false, _ body: (DiskStore) -> Void) {
        if turn.isHeldByCurrentThread {
            store.sharing.enterNestedCall(store)
            return body(store)
        }
        // The marks are returned, not written into variables `operate` captures: every access to a
        // captured variable that is written pays a dynamic exclusivity check (four per operation).
        func operate() -> (before: UInt64, after: UInt64) {
            turn.lock()
            let before = client.lastPublished
            store.checkIndexWhole()
            store.sharing.runOperation(store, readsWithoutLock: readsWithoutLock, body)
            let after = client.lastPublished
            turn.unlock()
            return (before, after)
        }
        let marks: (before: UInt64, after: UInt64)
        if queuedBlocks.value == 0 {
            marks = operate()
        } else {
            var queued = (before: UInt64(0), after: UInt64(0))
            queue.sync { queued = operate() } // the non-generic overload: `() -> Void`
            marks = queued
        }
        if marks.after > marks.before { client.deliver(through: marks.after) }
    }

    /// Runs `body` as an operation of the store later, after every operation submitted before it.
    package func async(_ body: @escaping @Sendable (DiskStore) -> Void) {
        queuedBlocks.increment()
        queue.async {
            self.turn.lock()
            // As in ``run(readsWithoutLock:_:)``; what other processes changed reaches observers off the queue.
            let before = self.client.lastPublished
            self.store.checkIndexWhole()
            self.store.sharing.beginOperation(self.store)
            let caughtUp = self.client.lastPublished
            if caughtUp > before { DispatchQueue.global().async { self.client.deliver(through: caughtUp) } }
            body(self.store)
            self.store.sharing.endOperation(self.store)
            self.turn.unlock()
            self.queuedBlocks.decrement()
        }
    }

    /// Runs `body` in turn later, as ``async(_:)``, without holding the engine (``StoreTurn``): nothing
    /// runs if its last storage is released first, which closes the store at once, doing that work
    /// itself; a release while it runs closes the store right after it. For housekeeping that a read
    /// leaves behind (its access records), no operation of the app.
    func asyncUnlessClosed(_ body: @escaping @Sendable (DiskStore) -> Void) {
        storeTurn.async(on: queue, body)
    }

    /// Tells the engine that the layers above registered or removed an observer. A store that follows
    /// other processes' changes (a reader, a writer among several) then marks the segment it has read up
    /// to right away, not at its next catch-up, so that writers keep what they retire until it has read
    /// it and its observers hear every change made from now on; or, once nothing observes it, lets the
    /// mark go, so that it holds nothing back (``CatchingUp/markFollowed(_:)``).
    package func observersChanged() {
        asyncUnlessClosed { store in (store.sharing as? CatchingUp)?.markFollowed(store) }
    }
}
