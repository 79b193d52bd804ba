import Foundation
import StashEngine
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Hands a store's committed changes to its observers, in commit order, on the threads that made them.
///
/// The store's queue only *enqueues* (``enqueue(_:)``, numbered in commit order); the caller of the
/// mutating call delivers once it is off the queue (``deliver(through:)``), before its call returns or
/// its completion runs (Contract item 12). One thread delivers a line at a time, oldest change first,
/// so every observer sees changes in commit order even when several threads write at once.
///
/// What a call waits for depends on whether it is made from inside an observer closure:
/// - **A call made outside observer closures** (a thread delivering nothing) returns once every
///   change up to its own has reached every observer registered before it: it waits while another
///   thread delivers that line, and delivers what is left itself. It also waits, before it returns,
///   for every change that the observer closures it ran (on this thread) made in other stores.
/// - **A call made from inside an observer closure** (of any store) never waits for another thread:
///   a thread that is delivering and blocked on another deliverer could wait in a cycle (A's observer
///   writing into B while B's writes into A, from two threads). Its change is delivered
///   - by this thread right after the closure returns, when this thread is delivering that line
///     already (an observer writing into its own store);
///   - by this thread before the call returns, when no thread is delivering that line;
///   - otherwise by the thread delivering that line, which is told to go on through it; the call
///     returns at once, and the outermost call of this thread waits for it before it returns.
///
/// Only threads delivering nothing ever wait, and only for threads that are delivering, which never
/// wait for a line: no cycle of waits can form. (An observer closure that itself blocks, on a lock or
/// on another thread, is outside this: it holds up its line's delivery while it blocks.)
final class DeliveryLine: @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched while `condition` is locked.

    /// One committed change and the deliveries bound to it when it was committed.
    struct Batch {
        let sequence: UInt64
        let deliveries: [@Sendable () -> Void]
    }

    private struct State {
        /// The number of the last change enqueued (changes are numbered from 1).
        var enqueued: UInt64 = 0
        /// Every change up to this number has been delivered.
        var delivered: UInt64 = 0
        /// Changes enqueued and not yet taken by a delivering thread, oldest first (from `head` on).
        var waiting: [Batch] = []
        var head = 0
        /// The thread delivering now, and how far it goes (calls from inside observer closures, on
        /// this thread or another, extend it).
        var deliverer: pthread_t?
        var deliverThrough: UInt64 = 0
    }

    private let condition = NSCondition()
    private var state = State()

    /// ``State/enqueued``, also written with every change enqueued: read without the lock, since
    /// every operation on the store reads it twice.
    private let enqueued = AtomicWord()

    /// The number of the last change enqueued: a caller passes it to ``deliver(through:)``.
    var lastEnqueued: UInt64 { enqueued.value }

    /// Whether every change up to `sequence` has been delivered.
    func isDelivered(through sequence: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return state.delivered >= sequence
    }

    /// Numbers the next change and queues the deliveries `make` builds for that number (on the
    /// store's queue, so numbers follow commit order).
    func enqueue(_ make: (_ sequence: UInt64) -> [@Sendable () -> Void]) {
        condition.lock()
        defer { condition.unlock() }
        state.enqueued += 1
        enqueued.store(state.enqueued)
        state.waiting.append(Batch(sequence: state.enqueued, deliveries: make(state.enqueued)))
    }

    /// Delivers every change up to `sequence`, or has it delivered, as the type's documentation says:
    /// outside observer closures it returns once they are delivered; inside one it never waits for
    /// another thread. Never call it on the store's queue (observer closures would run there).
    func deliver(through sequence: UInt64) {
        let thread = DeliveringThread.current
        guard thread.depth == 0 else {
            deliverWithoutWaiting(through: sequence, on: thread)
            return
        }
        deliverWaiting(through: sequence, on: thread)
        // What the closures run above handed to other threads' deliveries: waited for here, where
        // this thread is delivering nothing (waiting cannot close a cycle).
        while !thread.handedOff.isEmpty {
            let (line, handed) = thread.handedOff.removeFirst()
            line.deliverWaiting(through: handed, on: thread)
        }
    }

    /// Returns once every change up to `sequence` is delivered: waits while another thread delivers,
    /// delivers the rest itself. Only for a thread that is delivering nothing.
    private func deliverWaiting(through sequence: UInt64, on thread: DeliveringThread) {
        condition.lock()
        defer { condition.unlock() }
        while state.delivered < sequence {
            if state.deliverer != nil {
                condition.wait()
                continue
            }
            runDeliveries(through: sequence, on: thread)
        }
    }

    /// For a call from inside an observer closure: delivers up to `sequence` if no thread is
    /// delivering this line; else extends that thread's delivery through it and returns at once.
    private func deliverWithoutWaiting(through sequence: UInt64, on thread: DeliveringThread) {
        condition.lock()
        defer { condition.unlock() }
        guard state.delivered < sequence else { return }
        guard let deliverer = state.deliverer else {
            runDeliveries(through: sequence, on: thread)
            return
        }
        state.deliverThrough = max(state.deliverThrough, sequence)
        // This thread's own outer delivery of this line goes on through it right after the closure;
        // another thread's is waited for by this thread's outermost call.
        if pthread_equal(deliverer, pthread_self()) == 0 { thread.handedOff.append((self, sequence)) }
    }

    /// Delivers, as this line's deliverer, every change through `sequence` and through whatever calls
    /// made meanwhile extended it to. Called and returns with `condition` locked.
    private func runDeliveries(through sequence: UInt64, on thread: DeliveringThread) {
        state.deliverer = pthread_self()
        state.deliverThrough = max(state.deliverThrough, sequence)
        thread.depth += 1
        while state.head < state.waiting.count, state.waiting[state.head].sequence <= state.deliverThrough {
            let batch = state.waiting[state.head]
            // Not kept once taken: its deliveries hold observers, which must go when their owners let go.
            state.waiting[state.head] = Batch(sequence: batch.sequence, deliveries: [])
            state.head += 1
            condition.unlock()
            for delivery in batch.deliveries { delivery() }
            condition.lock()
            state.delivered = batch.sequence
            condition.broadcast()
        }
        thread.depth -= 1
        if state.head == state.waiting.count {
            state.waiting.removeAll(keepingCapacity: true)
            state.head = 0
        }
        state.deliverer = nil
        condition.broadcast()
    }
}

/// What one thread is doing with deliveries: how many lines it is delivering now (nested: an
/// observer's call into another store), and the changes its calls from inside observer closures
/// handed to other threads' deliveries, which its outermost call waits for.
final class DeliveringThread {
    var depth = 0
    var handedOff: [(line: DeliveryLine, sequence: UInt64)] = []

    private static let key = "Stash.DeliveringThread"

    /// The calling thread's record (made on its first delivery, kept in its thread dictionary).
    static var current: DeliveringThread {
        let dictionary = Thread.current.threadDictionary
        if let existing = dictionary[key] as? DeliveringThread { return existing }
        let made = DeliveringThread()
        dictionary[key] = made
        return made
    }
}
