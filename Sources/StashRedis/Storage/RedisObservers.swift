import Foundation
import Stash

/// A change made through a Redis store of this process, with the value's bytes, so each observer
/// decodes it with its own view's transformer.
enum RedisEvent: Sendable {
    case set(key: String, value: Data, previous: Data?)
    case remove(keys: [String])
    case removeAll(keys: [String])
    case removeExpired

    var storageChanges: [StorageChange] {
        switch self {
        case .set(let key, _, _): return [.add(key: key)]
        case .remove(let keys): return keys.map { .remove(key: $0) }
        case .removeAll: return [.removeAll]
        case .removeExpired: return [.removeExpired]
        }
    }

    func touches(_ key: String) -> Bool {
        switch self {
        case .set(let changed, _, _): return changed == key
        case .remove(let keys), .removeAll(let keys): return keys.contains(key)
        case .removeExpired: return false
        }
    }
}

/// The observers of one Redis store and its views, and the queue of its asynchronous API.
///
/// Observers see the changes made through this process's store (and its views), in the order the
/// calls returned, on a serial queue of their own; changes made by other processes reach the near
/// cache's memory layer (as invalidations) but not observers. See Docs/Redis.md for why.
final class RedisObservers: Sendable {
    typealias Delivery = @Sendable (RedisEvent) -> Bool

    private struct State {
        var nextID = 0
        var all: [Int: Delivery] = [:]
        var byKey: [String: [Int: Delivery]] = [:]
    }

    private let state = Locked(State())
    private let deliveryQueue = DispatchQueue(label: "StashRedis.observers")
    /// The scheduler of ``RedisAsyncStorage`` (shared by every view of the store), set by the store.
    let scheduler: AsyncCallScheduler

    init(asyncLimit: Int) {
        scheduler = AsyncCallScheduler(limit: asyncLimit)
    }

    /// Whether anyone observes: a write then builds no event delivery at all.
    private var hasObservers: Bool {
        state.withLock { !$0.all.isEmpty || !$0.byKey.isEmpty }
    }

    func hasKeyObservers(_ key: String) -> Bool {
        state.withLock { !$0.byKey.isEmpty && $0.byKey[key] != nil }
    }

    func publish(_ event: RedisEvent) {
        guard hasObservers else { return }
        let targets: [(Int, String?, Delivery)] = state.withLock { state in
            var targets = state.all.sorted { $0.key < $1.key }.map { ($0.key, String?.none, $0.value) }
            for (key, observers) in state.byKey where event.touches(key) {
                targets += observers.sorted { $0.key < $1.key }.map { ($0.key, key, $0.value) }
            }
            return targets
        }
        guard !targets.isEmpty else { return }
        deliveryQueue.async {
            for (id, key, deliver) in targets where self.isRegistered(id, key: key) {
                if !deliver(event) { self.unregister(id, key: key) }
            }
        }
    }

    func add(forKey key: String?, _ deliver: @escaping Delivery) -> ObservationToken {
        let id = state.withLock { state in
            state.nextID += 1
            if let key { state.byKey[key, default: [:]][state.nextID] = deliver } else { state.all[state.nextID] = deliver }
            return state.nextID
        }
        return ObservationToken { [weak self] in self?.unregister(id, key: key) }
    }

    func removeAll(forKey key: String?) {
        state.withLock { state in
            if let key { state.byKey[key] = nil } else { state.all.removeAll() }
        }
    }

    func removeAllKeyObservers() {
        state.withLock { $0.byKey.removeAll() }
    }

    /// Waits until every delivery queued so far has run; for tests.
    func waitUntilDelivered() {
        deliveryQueue.sync {}
    }

    private func isRegistered(_ id: Int, key: String?) -> Bool {
        state.withLock { state in key.map { state.byKey[$0]?[id] != nil } ?? (state.all[id] != nil) }
    }

    private func unregister(_ id: Int, key: String?) {
        state.withLock { state in
            guard let key else { state.all[id] = nil; return }
            state.byKey[key]?[id] = nil
            if state.byKey[key]?.isEmpty == true { state.byKey[key] = nil }
        }
    }
}
