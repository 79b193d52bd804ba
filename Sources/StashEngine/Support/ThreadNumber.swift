#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A number for the calling thread, given the first time it asks (0, 1, 2, …) and kept in a
/// thread-local slot: threads that start reading together get different numbers, so they take
/// different stripes of state kept per thread (reads off the queue: ``OffQueueReads``; and the
/// layers above, for their own).
package enum ThreadNumber {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()
    private static let next = Locked(0)

    /// The calling thread's number.
    @inline(__always)
    package static var current: Int {
        let stored = Int(bitPattern: pthread_getspecific(key))
        return stored != 0 ? stored - 1 : assign()
    }

    @inline(never)
    private static func assign() -> Int {
        let number = next.withLock { next in
            defer { next += 1 }
            return next
        }
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: number + 1))
        return number
    }
}
