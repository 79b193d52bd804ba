#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// The thread discipline of Docs/Architecture.md ("Threads and queues"), checked in debug builds, as
// swift-nio checks its event loop: a disk store is touched only on its engine's queue, and locks that
// nest are taken in one order. Release builds compile none of it.

extension DiskStore {
    /// Debug builds: stops the process unless the caller runs on the queue of the engine that owns this
    /// store (Contract item 4). A store not handed to an engine yet (while it opens) is not checked.
    ///
    /// The same test as `dispatchPrecondition(condition: .onQueue(_:))`, through the engine's
    /// queue-specific key, because libdispatch on Linux dies without a readable message.
    @inline(__always)
    func assertOnQueue(_ function: StaticString = #function) {
        #if DEBUG
        if let isOnOwningQueue {
            precondition(isOnOwningQueue(), "DiskStore.\(function) called off its engine's queue (Contract item 4)")
        }
        #endif
    }
}

/// The order in which Stash's locks may nest: a thread holding one may take only a later one.
/// Locks made without an order are not checked.
/// Docs/Architecture.md, "Locks", lists every lock and queue, these ranks among them.
package enum LockOrder: Int, Sendable {
    /// The engine an in-memory store's folder holds (`OwnedFolder`): the engine is let go, and so
    /// closed, while it is held, which takes the engine's turn, the registry and the store's index.
    case inMemoryFolder = 1
    /// ``DiskEngine``'s registry of open folders (never held while a store opens or closes).
    case engineRegistry = 2
    /// An engine's folder handle, read under the registry (an orphaned writer is looked for there).
    case engineFolder = 3
    /// A store's index (``DiskStore/sharedIndex``).
    case storeIndex = 4
    /// What a store's reads off the queue share with it (``SegmentLog/offQueue``): taken after the
    /// index is let go, and under it by a queue that changes the segments while it holds the index.
    case offQueueReads = 5
}

#if DEBUG
/// The highest ``LockOrder`` each thread holds, in a thread-local slot (0: none).
package enum HeldLocks {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// Notes that this thread takes a lock of `order`; returns what to restore when it lets it go.
    static func willTake(_ order: LockOrder) -> Int {
        let held = Int(bitPattern: pthread_getspecific(key))
        precondition(held < order.rawValue,
                     "lock order violated: \(order) taken while holding \(LockOrder(rawValue: held).map { "\($0)" } ?? "a later lock")")
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: order.rawValue))
        return held
    }

    static func didRelease(restoring held: Int) {
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: held))
    }

    /// Whether the calling thread's highest lock is one of `order` (for tests of what runs in which hold).
    package static func highestIs(_ order: LockOrder) -> Bool {
        Int(bitPattern: pthread_getspecific(key)) == order.rawValue
    }
}
#endif
