package import Foundation
import StashEngine

/// The type-erased LRU behind a ``MemoryStorage`` and all its typed views.
///
/// A hit does not stop other readers: it takes only its thread's slot of a ``SlottedLock``, looks the
/// key up in the shared ``StampedIndex`` and marks it used with a stamp (an atomic store into the
/// entry's own word); a write takes every slot. Memory hits from several threads so write no common
/// cache line, and a `Storage` serves them without its serial queue and without one lock that every
/// reader waits for.
///
/// The least recently used entry is the one with the smallest stamp. A stamp is the monotonic clock
/// in nanoseconds, made larger than the last stamp its slot gave (so one thread's uses are always in
/// order, however coarse the clock) and, for a write, larger than every slot's (so whatever comes
/// after a write is newer than everything before it). Uses on different threads between two writes
/// are ordered by the clock; two that fall in one tick of it count in either order.
package final class MemoryCache: Sendable {
    struct Item {
        var object: AnyValueBox
        var cost: Int
        /// When the value itself expires.
        var expiry: Date
        /// When this copy should leave memory (``MemoryConfig/expiry`` inside a `Storage`).
        var dropAfter: Date
        var filePath: String?
    }

    private struct State {
        var items = StampedIndex<Item>()
        var totalCost = 0
        var tracksHits = false
    }

    /// What each slot keeps of its own.
    private struct Slot {
        /// Keys served from memory since the disk layer last asked, so it can count them as use, and
        /// their stamps (to merge the slots' lists in order).
        var recentHits: [String] = []
        var recentStamps: [UInt64] = []
        /// The last stamp given out through this slot.
        var lastStamp: UInt64 = 0

        /// A stamp for a use through this slot.
        @inline(__always)
        mutating func nextStamp() -> UInt64 {
            lastStamp = Swift.max(MonotonicClock.nanoseconds, lastStamp &+ 1)
            return lastStamp
        }
    }

    let config: MemoryConfig
    private let lock = SlottedLock(State()) { Slot() }
    /// Non-zero once a hit was recorded since ``takeRecentHits()`` last looked: asked before every
    /// write, which then takes no slot when no hit waits (the common case). Set by the first such hit
    /// only, so hits that follow just read it.
    private let hitsWaiting = AtomicWord()
    /// More pending hits than this per slot are dropped: they only refine the disk's LRU order.
    private static let maxRecentHits = 4096

    init(config: MemoryConfig) {
        self.config = config
    }

    deinit {
        lock.withExclusiveAccess { state, _ in state.items.deallocate() }
    }

    private enum Lookup {
        case hit(AnyValueBox, expiry: Date)
        case item(Item)
        case miss
        /// Found but past `dropAfter`: to be dropped under exclusive access.
        case stale
    }

    /// Looks `key` up holding the calling thread's slot and marks it used: the box and expiry, or
    /// (`wholeItem`) the item.
    @inline(__always)
    private func lookUp(_ key: String, now: Date, countsAsUse: Bool, wholeItem: Bool) -> Lookup {
        // Fields of the shared state only, no method called on it: that would copy it (see
        // `StampedIndex.markUsed(_:stamp:in:)`).
        lock.withSlot { shared, slot in
            guard let position = shared.pointee.items.positions[key] else { return .miss }
            // Through a buffer pointer: its subscript reads the fields in place, not a copy of the item.
            let found: Lookup = shared.pointee.items.values.withUnsafeBufferPointer { values in
                let index = Int(position)
                guard now < values[index].dropAfter else { return .stale }
                return wholeItem ? .item(values[index]) : .hit(values[index].object, expiry: values[index].expiry)
            }
            if case .stale = found { return found }
            let stamp = slot.nextStamp()
            StampedIndex<Item>.markUsed(position, stamp: stamp, in: shared.pointee.items.stamps)
            if countsAsUse, shared.pointee.tracksHits, slot.recentHits.count < Self.maxRecentHits {
                slot.recentHits.append(key)
                slot.recentStamps.append(stamp)
                if hitsWaiting.value == 0 { hitsWaiting.store(1) }
            }
            return found
        }
    }

    /// Drops `key` if its copy is (still) past `dropAfter`.
    @inline(never)
    private func dropIfStale(_ key: String, now: Date) {
        lock.withExclusiveAccess { state, _ in
            guard let position = state.items.position(of: key), now >= state.items.values[Int(position)].dropAfter else { return }
            if let old = state.items.remove(key) { state.totalCost -= old.cost }
        }
    }

    /// The item for `key`, marking it used; nil (and the copy dropped) once past `dropAfter`.
    func item(forKey key: String, now: Date) -> Item? {
        switch lookUp(key, now: now, countsAsUse: true, wholeItem: true) {
        case .item(let item): return item
        case .stale: dropIfStale(key, now: now)
        case .hit, .miss: break
        }
        return nil
    }

    /// The boxed value of `key` and its expiry, marking it used; nil on a miss and for a copy past
    /// `dropAfter` (which is then dropped).
    ///
    /// The fast path of a memory hit: the calling thread's slot, one lookup, the item itself not
    /// copied. Not generic, so that callers in unspecialized generic code pay no type-metadata lookups here.
    /// - Parameter countsAsUse: Whether the disk layer counts the hit as a use of the key (an access
    ///   record); false for a read that a write of the same key follows in the same turn of the
    ///   queue (`update`, a transaction), whose record then carries the time of use itself.
    package func hit(forKey key: String, now: Date, countsAsUse: Bool = true) -> (box: AnyValueBox, expiry: Date)? {
        switch lookUp(key, now: now, countsAsUse: countsAsUse, wholeItem: false) {
        case .hit(let box, let expiry): return (box, expiry)
        case .stale: dropIfStale(key, now: now)
        case .item, .miss: break
        }
        return nil
    }

    /// A stamp newer than any given out so far, through any slot; under exclusive access.
    private static func writeStamp(_ slots: SlottedLock<State, Slot>.Slots) -> UInt64 {
        var stamp = MonotonicClock.nanoseconds
        slots.forEach { stamp = Swift.max(stamp, $0.lastStamp &+ 1) }
        slots.forEach { $0.lastStamp = stamp }
        return stamp
    }

    /// Stores `item`, then evicts least recently used items until both limits hold.
    /// An item costlier than the whole limit is not kept (and evicts nothing else).
    func set(_ item: Item, forKey key: String) {
        lock.withExclusiveAccess { state, slots in
            if config.totalCostLimit > 0, item.cost > config.totalCostLimit {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
                return
            }
            if let old = state.items.set(key, item, stamp: Self.writeStamp(slots)) { state.totalCost -= old.cost }
            state.totalCost += item.cost
            while (config.countLimit > 0 && state.items.count > config.countLimit)
                    || (config.totalCostLimit > 0 && state.totalCost > config.totalCostLimit),
                  let oldest = state.items.removeLeastRecentlyUsed() {
                state.totalCost -= oldest.value.cost
            }
        }
    }

    /// Whether any of `keys` is in memory, holding only the calling thread's slot: a removal of keys
    /// that are not there (a write of a new key drops it from memory) then stops no reader.
    private func holdsAny(_ keys: some Sequence<String>) -> Bool {
        lock.withSlot { shared, _ in keys.contains { shared.pointee.items.positions[$0] != nil } }
    }

    func remove(_ key: String) {
        guard holdsAny(CollectionOfOne(key)) else { return }
        lock.withExclusiveAccess { state, _ in
            if let old = state.items.remove(key) { state.totalCost -= old.cost }
        }
    }

    func remove(_ keys: some Sequence<String>) {
        guard holdsAny(keys) else { return }
        lock.withExclusiveAccess { state, _ in
            for key in keys {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
            }
        }
    }

    func removeAll() {
        lock.withExclusiveAccess { state, slots in
            state.items.removeAll()
            state.totalCost = 0
            slots.forEach { slot in
                slot.recentHits.removeAll()
                slot.recentStamps.removeAll()
            }
        }
    }

    /// Removes items whose value expired at or before `now`; returns their keys.
    @discardableResult
    func removeExpired(now: Date) -> [String] {
        lock.withExclusiveAccess { state, _ in
            let expired = state.items.keys.indices.filter { state.items.values[$0].expiry <= now }.map { state.items.keys[$0] }
            for key in expired {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
            }
            return expired
        }
    }

    /// Starts recording hits for ``takeRecentHits()`` (done by the disk layer behind this cache).
    func trackHits() {
        lock.withExclusiveAccess { state, _ in state.tracksHits = true }
    }

    /// The keys hit since the last call, oldest first (the slots' lists merged by stamp).
    func takeRecentHits() -> [String] {
        // Cleared before the slots are looked at: a hit recorded in a slot already looked at then
        // finds it clear (it holds that slot after this call let it go) and sets it again.
        guard hitsWaiting.value != 0 else { return [] }
        hitsWaiting.store(0)
        var (hits, stamps, slotsWithHits) = ([String](), [UInt64](), 0)
        lock.forEachSlot { slot in
            guard !slot.recentHits.isEmpty else { return }
            // Copied out, not taken whole: a slot's arrays then stay its own and keep their buffers
            // (emptying an array whose buffer the caller shared would allocate a new one, two a slot).
            slotsWithHits += 1
            hits += slot.recentHits
            stamps += slot.recentStamps
            slot.recentHits.removeAll(keepingCapacity: true)
            slot.recentStamps.removeAll(keepingCapacity: true)
        }
        guard slotsWithHits > 1 else { return hits }
        // Each slot's hits are in order of use; those of several slots together are not.
        return stamps.indices.sorted { stamps[$0] < stamps[$1] }.map { hits[$0] }
    }

    var keys: [String] { lock.withSlot { shared, _ in shared.pointee.items.keys } }

    /// The keys that `isIncluded` accepts, filtered holding the calling thread's slot.
    func keys(where isIncluded: (String) -> Bool) -> [String] { lock.withSlot { shared, _ in shared.pointee.items.keys.filter(isIncluded) } }
    var count: Int { lock.withSlot { shared, _ in shared.pointee.items.count } }
    var totalCost: Int { lock.withSlot { shared, _ in shared.pointee.totalCost } }

    #if DEBUG
    func checkInvariants() -> Bool {
        lock.withExclusiveAccess { state, _ in
            state.items.checkInvariants()
                && state.totalCost == state.items.values.reduce(0) { $0 + $1.cost }
                && (config.countLimit == 0 || state.items.count <= config.countLimit)
                && (config.totalCostLimit == 0 || state.totalCost <= config.totalCostLimit)
        }
    }
    #endif
}

/// The monotonic clock, in nanoseconds: what ``MemoryCache`` stamps uses with.
enum MonotonicClock {
    @inline(__always)
    static var nanoseconds: UInt64 {
        #if canImport(Darwin)
        clock_gettime_nsec_np(CLOCK_UPTIME_RAW)
        #else
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
        #endif
    }
}
