#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A mutex that spins briefly before it parks, and knows which thread holds it: the lock every
/// operation of a disk engine holds while it runs (``DiskEngine/run(readsWithoutLock:_:)``).
///
/// Why it spins: an engine's operation holds it for a few microseconds (a write is one `pwrite`),
/// and on a machine of few cores a thread that parks (a futex wait, then a wake and a context switch
/// when the lock is let go) spends longer asleep than the holder needed; two writers that park on
/// each other get fewer writes through than one (Docs/Architecture.md, "Threads and queues"). A waiter
/// watches the holder's word first and parks in the platform's mutex only when the holder takes
/// longer than ``spinLimit`` looks (a system call that blocks, a holder descheduled).
///
/// Why it knows its holder: a call made by the holder from inside its own operation (a transformer
/// or an observer calling back into the store) runs inline instead of deadlocking
/// (``isHeldByCurrentThread``).
package final class SpinningLock: @unchecked Sendable {
    // @unchecked Sendable: the mutex is the platform's, used only through its lock functions; the
    // holder's word is an atomic one.
    private let mutex: UnsafeMutablePointer<PlatformMutex>
    /// The thread that holds the lock (``currentThread``), 0 while nobody does. Written only by the
    /// holder (after taking the mutex, and before letting it go), so a thread that reads its own
    /// number here holds the lock; read by waiters, which spin while it is not 0.
    private let holder = AtomicWord()

    /// How many times a waiter looks at the holder's word before it parks: some tens of µs on
    /// current hardware, several times an operation of `Storage` (whose memory layer works in turn
    /// too), far less than a time slice. Measured against 4,096 with two writer threads
    /// (Docs/Benchmarks.md, "Disk engine v4 (issue #32): sets from 2 threads").
    static let spinLimit = 32_768

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initializeMutex()
    }

    deinit {
        mutex.destroyMutex()
        mutex.deallocate()
    }

    /// A number for the calling thread, never 0, the same for as long as the thread runs.
    @inline(__always)
    static var currentThread: UInt64 {
        #if canImport(Glibc)
        UInt64(pthread_self())
        #else
        UInt64(UInt(bitPattern: pthread_self()))
        #endif
    }

    /// Whether the calling thread holds the lock.
    @inline(__always)
    package var isHeldByCurrentThread: Bool { holder.value == Self.currentThread }

    /// Takes the lock: at once if it is free, else after the holder lets it go, spinning first.
    /// Never call it while holding it (``isHeldByCurrentThread``): it does not nest.
    package func lock() {
        if !tryLock() {
            var looks = 0
            var taken = false
            while looks < Self.spinLimit {
                looks += 1
                // Reads only, so the waiter does not take the holder's cache line away while it works.
                if holder.value == 0, tryLock() {
                    taken = true
                    break
                }
            }
            if !taken { mutex.lock() }
        }
        holder.store(Self.currentThread)
    }

    /// Lets the lock go; only its holder may.
    package func unlock() {
        holder.store(0)
        mutex.unlock()
    }

    /// Runs `body` holding the lock.
    @inline(__always)
    package func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }

    @inline(__always)
    private func tryLock() -> Bool {
        mutex.tryLock()
    }
}
