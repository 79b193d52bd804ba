// `package`: the mutex type is part of what the layers above (the memory layer's `SlottedLock`) use.
#if canImport(Darwin)
package import Darwin
#elseif canImport(Glibc)
package import Glibc
#elseif canImport(Musl)
package import Musl
#endif

/// The platform's cheapest mutex: `os_unfair_lock` on Apple platforms, `pthread_mutex_t` elsewhere
/// (glibc's adaptive kind where there is one). One definition for every lock of the package
/// (``Locked``, ``SpinningLock``, the memory layer's `SlottedLock`), each of which puts it in memory
/// it lays out itself and never moves (a mutex must not be moved once used).
#if canImport(Darwin)
package typealias PlatformMutex = os_unfair_lock
#else
package typealias PlatformMutex = pthread_mutex_t
#endif

extension UnsafeMutablePointer where Pointee == PlatformMutex {
    /// Makes the memory an unlocked mutex (it must not hold one).
    package func initializeMutex() {
        #if canImport(Darwin)
        initialize(to: os_unfair_lock())
        #else
        initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if canImport(Glibc)
        // glibc's adaptive mutex (PTHREAD_MUTEX_ADAPTIVE_NP, 3, which Swift does not import) spins
        // a little before it sleeps: the sections under these locks take a few hundred nanoseconds,
        // and two threads that met on one (readers on the index) otherwise each paid a futex sleep
        // and wake-up.
        pthread_mutexattr_settype(&attributes, 3)
        #endif
        pthread_mutex_init(self, &attributes)
        pthread_mutexattr_destroy(&attributes)
        #endif
    }

    /// Ends the mutex (it must be unlocked); the memory is then uninitialized.
    package func destroyMutex() {
        #if !canImport(Darwin)
        pthread_mutex_destroy(self)
        #endif
        deinitialize(count: 1)
    }

    @inline(__always)
    package func lock() {
        #if canImport(Darwin)
        os_unfair_lock_lock(self)
        #else
        pthread_mutex_lock(self)
        #endif
    }

    @inline(__always)
    package func unlock() {
        #if canImport(Darwin)
        os_unfair_lock_unlock(self)
        #else
        pthread_mutex_unlock(self)
        #endif
    }

    /// Takes the mutex if it is free; whether it did.
    @inline(__always)
    package func tryLock() -> Bool {
        #if canImport(Darwin)
        os_unfair_lock_trylock(self)
        #else
        pthread_mutex_trylock(self) == 0
        #endif
    }
}
