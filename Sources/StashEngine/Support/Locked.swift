#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Mutable state behind one lock, reached only through ``withLock(_:)``.
///
/// `package`: StashHTTP and StashRedis guard their state with it too (one helper, one place).
///
/// A thin wrapper over the platform's cheapest mutex (`os_unfair_lock` on Apple platforms,
/// `pthread_mutex_t` elsewhere). `Synchronization.Mutex` would do on Linux, but it needs
/// macOS 15 / iOS 18 on Apple platforms, which is more than Stash asks of its users.
package final class Locked<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only ever touched between lock() and unlock().
    /// Behind a pointer rather than a stored `var`: the lock already makes access exclusive, and a
    /// class's `var` passed `inout` would also pay a dynamic exclusivity check on every call.
    private let state: UnsafeMutablePointer<State>
    private let lock: UnsafeMutablePointer<PlatformMutex>
    #if DEBUG
    private let order: LockOrder?
    #endif

    /// `order`: where this lock stands among the locks that nest (checked in debug builds only).
    package init(_ state: State, order: LockOrder? = nil) {
        #if DEBUG
        self.order = order
        #endif
        self.state = Self.allocateLine(State.self)
        self.state.initialize(to: state)
        lock = Self.allocateLine(PlatformMutex.self)
        lock.initializeMutex()
    }

    deinit {
        lock.destroyMutex()
        UnsafeMutableRawPointer(lock).deallocate()
        state.deinitialize(count: 1)
        UnsafeMutableRawPointer(state).deallocate()
    }

    /// Memory for one `T` starting a cache line of its own and filling it (64 bytes, at least): two
    /// locks (or a lock and another's state) never share a line, so threads that each take their
    /// own lock do not pass lines back and forth (false sharing: the off-queue reads' stripes).
    private static func allocateLine<T>(_ type: T.Type) -> UnsafeMutablePointer<T> {
        let size = (max(MemoryLayout<T>.size, 1) + 63) & ~63
        return UnsafeMutableRawPointer.allocate(byteCount: size, alignment: max(64, MemoryLayout<T>.alignment))
            .bindMemory(to: T.self, capacity: 1)
    }

    /// Runs `body` with exclusive access to the state. Never call back into the same lock from `body`.
    @inline(__always)
    package func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        #if DEBUG
        let held = order.map(HeldLocks.willTake)
        defer { if let held { HeldLocks.didRelease(restoring: held) } }
        #endif
        lock.lock()
        defer { lock.unlock() }
        return try body(&state.pointee)
    }
}
