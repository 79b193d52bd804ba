import Foundation
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
/// its completion runs (Contract item 12). One thread delivers at a time, oldest first, so every observer
/// sees changes in commit order even when several threads write at once; a thread whose change another
/// thread is delivering waits for it. A call made from inside an observer closure does not wait for
/// its own change (the delivering thread is busy with the change before it): that change is delivered
/// by the same thread right after the closure returns, before the outer mutating call returns.
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
        /// The thread delivering now, and how far it goes (calls from inside its closures extend it).
        var deliverer: pthread_t?
        var deliverThrough: UInt64 = 0
    }

    private let condition = NSCondition()
    private var state = State()

    /// The number of the last change enqueued: a caller passes it to ``deliver(through:)``.
    var lastEnqueued: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return state.enqueued
    }

    /// Whether every change up to `sequence` has been delivered.
    func isDelivered(through sequence: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return state.delivered >= sequence
    }

    /// Numbers `deliveries` as the next change (on the store's queue, so numbers follow commit order).
    func enqueue(_ deliveries: [@Sendable () -> Void]) {
        condition.lock()
        defer { condition.unlock() }
        state.enqueued += 1
        state.waiting.append(Batch(sequence: state.enqueued, deliveries: deliveries))
    }

    /// Returns once every change up to `sequence` has been delivered, delivering them itself when no
    /// other thread is; never call it on the store's queue (observer closures would run there).
    func deliver(through sequence: UInt64) {
        condition.lock()
        defer { condition.unlock() }
        let me = pthread_self()
        while state.delivered < sequence {
            if let deliverer = state.deliverer {
                if pthread_equal(deliverer, me) != 0 {
                    // Called from inside an observer closure: the loop below delivers it next.
                    state.deliverThrough = max(state.deliverThrough, sequence)
                    return
                }
                condition.wait()
                continue
            }
            state.deliverer = me
            state.deliverThrough = sequence
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
            if state.head == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.head = 0
            }
            state.deliverer = nil
            condition.broadcast()
        }
    }
}
