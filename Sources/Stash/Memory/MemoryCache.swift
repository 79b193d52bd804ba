@_spi(StashLayers) import StashEngine
package import Foundation

/// The type-erased, locked LRU behind a ``MemoryStorage`` and all its typed views.
///
/// Every operation takes the one lock for a few dictionary operations, which is what lets a
/// `Storage` serve memory hits without going through its serial queue.
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
        var items = LRUIndex<Item>()
        var totalCost = 0
        /// Keys served from memory since the disk layer last asked, so it can count them as use.
        var recentHits: [String] = []
        var tracksHits = false
    }

    let config: MemoryConfig
    private let state = Locked(State())
    /// More pending hits than this are dropped: they only refine the disk's LRU order.
    private static let maxRecentHits = 4096

    init(config: MemoryConfig) {
        self.config = config
    }

    /// The item for `key`, marking it used; nil (and the copy dropped) once past `dropAfter`.
    func item(forKey key: String, now: Date) -> Item? {
        state.withLock { state in
            guard let item = state.items.use(key) else { return nil }
            if now >= item.dropAfter {
                state.items.remove(key)
                state.totalCost -= item.cost
                return nil
            }
            if state.tracksHits, state.recentHits.count < Self.maxRecentHits { state.recentHits.append(key) }
            return item
        }
    }

    /// The boxed value of `key` and its expiry, marking it used; nil on a miss and for a copy past
    /// `dropAfter` (which is then dropped).
    ///
    /// The fast path of a memory hit: one lock, one lookup, the item itself not copied. Not generic,
    /// so that callers in unspecialized generic code pay no type-metadata lookups here.
    /// - Parameter countsAsUse: Whether the disk layer counts the hit as a use of the key (an access
    ///   record); false for a read that a write of the same key follows in the same turn of the
    ///   queue (`update`, a transaction), whose record then carries the time of use itself.
    package func hit(forKey key: String, now: Date, countsAsUse: Bool = true) -> (box: AnyValueBox, expiry: Date)? {
        state.withLock { state in
            let found = state.items.use(key, reading: { item -> (box: AnyValueBox, expiry: Date)? in
                now < item.dropAfter ? (item.object, item.expiry) : nil
            })
            guard let found else { return nil }
            guard let hit = found else {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
                return nil
            }
            if countsAsUse, state.tracksHits, state.recentHits.count < Self.maxRecentHits { state.recentHits.append(key) }
            return hit
        }
    }

    /// Stores `item`, then evicts least recently used items until both limits hold.
    /// An item costlier than the whole limit is not kept (and evicts nothing else).
    func set(_ item: Item, forKey key: String) {
        state.withLock { state in
            if config.totalCostLimit > 0, item.cost > config.totalCostLimit {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
                return
            }
            if let old = state.items.set(key, item) { state.totalCost -= old.cost }
            state.totalCost += item.cost
            // The limits first: `oldest` copies out an entry (its key and value), for nothing when they hold.
            while (config.countLimit > 0 && state.items.count > config.countLimit)
                    || (config.totalCostLimit > 0 && state.totalCost > config.totalCostLimit),
                  let oldest = state.items.oldest {
                state.items.remove(oldest.key)
                state.totalCost -= oldest.value.cost
            }
        }
    }

    func remove(_ key: String) {
        state.withLock { state in
            if let old = state.items.remove(key) { state.totalCost -= old.cost }
        }
    }

    func remove(_ keys: some Sequence<String>) {
        state.withLock { state in
            for key in keys {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
            }
        }
    }

    func removeAll() {
        state.withLock { state in
            state.items.removeAll()
            state.totalCost = 0
            state.recentHits.removeAll()
        }
    }

    /// Removes items whose value expired at or before `now`; returns their keys.
    @discardableResult
    func removeExpired(now: Date) -> [String] {
        state.withLock { state in
            let expired = state.items.entries.filter { $0.value.expiry <= now }.map(\.key)
            for key in expired {
                if let old = state.items.remove(key) { state.totalCost -= old.cost }
            }
            return expired
        }
    }

    /// Starts recording hits for ``takeRecentHits()`` (done by the disk layer behind this cache).
    func trackHits() {
        state.withLock { $0.tracksHits = true }
    }

    /// The keys hit since the last call, oldest first.
    func takeRecentHits() -> [String] {
        state.withLock { state in
            // Asked before every write: with no hits (the common case) nothing is copied or allocated
            // (emptying an array whose buffer the caller now shares would allocate a new one).
            guard !state.recentHits.isEmpty else { return [] }
            defer { state.recentHits.removeAll(keepingCapacity: true) }
            return state.recentHits
        }
    }

    var keys: [String] { state.withLock { $0.items.keys } }

    /// The keys that `isIncluded` accepts, filtered under the lock.
    func keys(where isIncluded: (String) -> Bool) -> [String] { state.withLock { $0.items.keys(where: isIncluded) } }
    var count: Int { state.withLock { $0.items.count } }
    var totalCost: Int { state.withLock { $0.totalCost } }

    #if DEBUG
    func checkInvariants() -> Bool {
        state.withLock { state in
            state.items.checkInvariants()
                && state.totalCost == state.items.entries.reduce(0) { $0 + $1.value.cost }
                && (config.countLimit == 0 || state.items.count <= config.countLimit)
                && (config.totalCostLimit == 0 || state.totalCost <= config.totalCostLimit)
        }
    }
    #endif
}
