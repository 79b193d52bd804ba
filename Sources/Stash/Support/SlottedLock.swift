#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import StashEngine

/// A reader-writer lock made of one mutex per slot, for state that many threads read at once and
/// few change: the memory layer's items (``MemoryCache``).
///
/// A reader takes the mutex of its thread's slot only (``withSlot(_:)``) and may read the shared
/// state and change its slot's own state; a writer takes every slot's mutex, in order
/// (``withExclusiveAccess(_:)``). Readers on different threads so write no common cache line: a
/// single mutex, or a `pthread_rwlock_t`'s reader count, is written by every reader, and two threads
/// reading through it pass that line back and forth (memory hits from two threads were 1.04–1.14× of
/// one thread's throughput behind one lock). Each slot (its mutex, then its state) fills cache lines
/// of its own. Threads are numbered in the order they first take a slot, so a few threads reading
/// at once have slots of their own; two threads on one slot are still correct, only slower.
///
/// A leaf lock: nothing else is taken while any slot is held.
final class SlottedLock<Shared, SlotState>: @unchecked Sendable {
    // @unchecked Sendable: `shared` is read only while a slot's mutex is held and changed only while
    // every slot's is; a slot's state is only touched while its mutex is held.
    private let shared: UnsafeMutablePointer<Shared>
    private let slots: Slots

    /// The slots' memory: `count` runs of `stride` bytes, each a mutex and then a `SlotState`.
    struct Slots {
        fileprivate let base: UnsafeMutableRawPointer
        let count: Int
        fileprivate let stride: Int
        fileprivate let stateOffset: Int

        fileprivate func mutex(_ index: Int) -> UnsafeMutablePointer<PlatformMutex> {
            (base + index * stride).assumingMemoryBound(to: PlatformMutex.self)
        }

        /// The state of slot `index`; only while its mutex (or every mutex) is held.
        func state(_ index: Int) -> UnsafeMutablePointer<SlotState> {
            (base + index * stride + stateOffset).assumingMemoryBound(to: SlotState.self)
        }

        /// Calls `body` with the state of every slot, in order; only while every mutex is held.
        func forEach(_ body: (inout SlotState) throws -> Void) rethrows {
            for index in 0..<count { try body(&state(index).pointee) }
        }
    }

    /// - Parameters:
    ///   - shared: What readers share.
    ///   - slotCount: How many slots, rounded up to a power of two (a thread's slot is its number
    ///     masked); see ``SlottedLockSlots/defaultCount``.
    ///   - slotState: Each slot's own state at first.
    init(_ shared: Shared, slotCount: Int = SlottedLockSlots.defaultCount, slotState: () -> SlotState) {
        self.shared = .allocate(capacity: 1)
        self.shared.initialize(to: shared)
        let cacheLine = 128 // two 64-byte lines: adjacent-line prefetchers fetch lines in pairs
        let stateOffset = Self.roundUp(MemoryLayout<PlatformMutex>.size, MemoryLayout<SlotState>.alignment)
        let stride = Self.roundUp(stateOffset + MemoryLayout<SlotState>.size, cacheLine)
        var count = 1
        while count < slotCount { count *= 2 }
        let base = UnsafeMutableRawPointer.allocate(byteCount: count * stride, alignment: max(cacheLine, MemoryLayout<SlotState>.alignment))
        slots = Slots(base: base, count: count, stride: stride, stateOffset: stateOffset)
        for index in 0..<count {
            (base + index * stride).bindMemory(to: PlatformMutex.self, capacity: 1)
            slots.mutex(index).initializeMutex()
            (base + index * stride + stateOffset).bindMemory(to: SlotState.self, capacity: 1).initialize(to: slotState())
        }
    }

    deinit {
        for index in 0..<slots.count {
            slots.state(index).deinitialize(count: 1)
            slots.mutex(index).destroyMutex()
        }
        slots.base.deallocate()
        shared.deinitialize(count: 1)
        shared.deallocate()
    }

    private static func roundUp(_ value: Int, _ multiple: Int) -> Int {
        (value + multiple - 1) / multiple * multiple
    }

    /// Runs `body` holding the calling thread's slot: it may read the shared state through the
    /// pointer (other readers read it at the same time) and change its slot's state. Never take
    /// another slot from `body`.
    ///
    /// A pointer, read as `shared.pointee.field`, so that the compiler reads the state in place: passed
    /// `borrowing`, it was copied out of its memory for the call, retaining the dictionary and arrays
    /// inside it, so every read wrote to reference counts that every reading thread shares; passed
    /// `inout`, readers on two threads were two overlapping modifications (ThreadSanitizer says so).
    @inline(__always)
    func withSlot<Result>(_ body: (_ shared: UnsafePointer<Shared>, _ slot: inout SlotState) throws -> Result) rethrows -> Result {
        let index = ThreadNumber.current & (slots.count - 1)
        let mutex = slots.mutex(index)
        mutex.lock()
        defer { mutex.unlock() }
        return try body(UnsafePointer(shared), &slots.state(index).pointee)
    }

    /// Runs `body` holding every slot in turn, one at a time, with that slot's state: what each slot
    /// gathered, taken without stopping all readers at once.
    func forEachSlot(_ body: (inout SlotState) throws -> Void) rethrows {
        for index in 0..<slots.count {
            let mutex = slots.mutex(index)
            mutex.lock()
            defer { mutex.unlock() }
            try body(&slots.state(index).pointee)
        }
    }

    /// Runs `body` holding every slot: no reader reads meanwhile, and `body` may change the shared
    /// state and every slot's. Never take a slot from `body`.
    func withExclusiveAccess<Result>(_ body: (inout Shared, Slots) throws -> Result) rethrows -> Result {
        for index in 0..<slots.count { slots.mutex(index).lock() }
        defer { for index in (0..<slots.count).reversed() { slots.mutex(index).unlock() } }
        return try body(&shared.pointee, slots)
    }
}

/// How many slots a ``SlottedLock`` has unless told.
enum SlottedLockSlots {
    /// A power of two, twice the processors the process may use, from 2 to 16: enough that the threads
    /// reading at one time rarely share a slot, few enough that a writer's taking every one stays cheap.
    static let defaultCount: Int = {
        var count = 2
        while count < min(16, 2 * ProcessInfo.processInfo.activeProcessorCount) { count *= 2 }
        return count
    }()
}
