import Foundation
import StashEngine

/// What the typed layers keep per open folder, beside its engine: the observers, the memory layers
/// in front of the disk, and the async API's count of pending mutations. It is the engine's one
/// ``EngineClient``: the engine reaches these layers through it and never names them.
final class StoreLayers: EngineClient, Sendable {
    let observers = ObservationCenter()
    /// Mutations submitted through the async API and not run yet (for its memory-hit fast path).
    let pendingAsyncMutations = PendingMutations()
    /// Behind a lock of its own: attached on the queue, but also asked for its hits by reads that do
    /// not take it (``DiskStore/readOffQueue(_:now:)``), which an attach must not change under them.
    private let memoryCaches = Locked<[WeakMemoryCache]>([])

    private struct WeakMemoryCache {
        weak var cache: MemoryCache?
    }

    /// Attaches a memory layer, which then never holds a key the disk no longer has. On the queue.
    func attach(_ cache: MemoryCache) {
        memoryCaches.withLock { caches in
            caches.removeAll { $0.cache == nil || $0.cache === cache }
            caches.append(WeakMemoryCache(cache: cache))
        }
        cache.trackHits()
    }

    // MARK: EngineClient

    var hasObservers: Bool { observers.hasObservers }

    func hasKeyObservers(_ key: String) -> Bool {
        observers.hasKeyObservers(key)
    }

    var hasPendingMutations: Bool { !pendingAsyncMutations.isEmpty }

    func publish(_ event: StoreEvent) {
        observers.publish(event)
    }

    func publish(_ events: [StoreEvent]) {
        observers.publish(events)
    }

    var lastPublished: UInt64 { observers.lastPublished }

    func deliver(through mark: UInt64) {
        observers.deliver(through: mark)
    }

    func dropFromMemory(_ keys: [String]?) {
        forEachMemoryCache { cache in
            if let keys { cache.remove(keys) } else { cache.removeAll() }
        }
    }

    func dropFromMemory(key: String) {
        forEachMemoryCache { $0.remove(key) }
    }

    func dropFromMemory(key: String, except layer: AnyObject) {
        forEachMemoryCache { cache in
            if cache !== layer { cache.remove(key) }
        }
    }

    /// Runs `body` with each memory layer still alive, holding the list's lock.
    private func forEachMemoryCache(_ body: (MemoryCache) -> Void) {
        memoryCaches.withLock { caches in
            for weak in caches {
                if let cache = weak.cache { body(cache) }
            }
        }
    }

    /// Stash's own bookkeeping (``ReservedKeys``: a migration's progress) is never evicted: losing it
    /// would start a migration over, or run a finished one again on values already migrated.
    func isPinned(_ key: String) -> Bool {
        ReservedKeys.contains(key)
    }

    func takeMemoryHits() -> [String] {
        var hits: [String] = []
        forEachMemoryCache { cache in
            // One memory layer (the common case): its array as it is, not appended to an empty one.
            let taken = cache.takeRecentHits()
            if hits.isEmpty { hits = taken } else { hits += taken }
        }
        return hits
    }
}

extension DiskEngine {
    /// The layers above this engine. Every engine is opened by `DiskStorage`, which gives it a
    /// ``StoreLayers`` (``DiskStorage/openEngine(_:)``), so the cast cannot fail.
    var layers: StoreLayers { unsafeDowncast(client, to: StoreLayers.self) }

    /// The folder's observers.
    var observers: ObservationCenter { layers.observers }

    /// The async API's pending mutations of this folder.
    var pendingAsyncMutations: PendingMutations { layers.pendingAsyncMutations }
}
