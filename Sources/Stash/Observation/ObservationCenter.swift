import Foundation

/// The observers of one store (shared by every view and instance on its directory).
///
/// Events are published on the store's queue and delivered, in order, on a serial queue of their
/// own, so an observer may call the storage without deadlocking (DESIGN item 4).
final class ObservationCenter: Sendable {
    /// Receives an event; returns false when its observer is gone, to be unregistered.
    typealias Delivery = @Sendable (StoreEvent) -> Bool

    private struct Registration {
        let deliver: Delivery
        /// An `AsyncStream` ends only when it is dropped or cancelled, never by the `removeAll…` calls
        /// (which would leave its `for await` loop waiting forever).
        let isStream: Bool
    }

    private struct State {
        var nextID = 0
        var storageObservers: [Int: Registration] = [:]
        var keyObservers: [String: [Int: Registration]] = [:]
    }

    private let state = Locked(State())
    private let deliveryQueue = DispatchQueue(label: "Stash.observers")

    func hasKeyObservers(_ key: String) -> Bool {
        state.withLock { $0.keyObservers[key] != nil }
    }

    /// Queues `event` for every observer it concerns.
    func publish(_ event: StoreEvent) {
        let targets: [(id: Int, key: String?, deliver: Delivery)] = state.withLock { state in
            var targets = state.storageObservers.sorted { $0.key < $1.key }.map { ($0.key, String?.none, $0.value.deliver) }
            for key in Set(event.keys) {
                for (id, registration) in (state.keyObservers[key] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    targets.append((id, key, registration.deliver))
                }
            }
            return targets
        }
        guard !targets.isEmpty else { return }
        deliveryQueue.async {
            for target in targets where self.isRegistered(target.id, key: target.key) {
                if !target.deliver(event) { self.unregister(target.id, key: target.key) }
            }
        }
    }

    func addStorageObserver(isStream: Bool = false, _ deliver: @escaping Delivery) -> ObservationToken {
        let id = state.withLock { state in
            state.nextID += 1
            state.storageObservers[state.nextID] = Registration(deliver: deliver, isStream: isStream)
            return state.nextID
        }
        return ObservationToken { [weak self] in self?.unregister(id, key: nil) }
    }

    func addKeyObserver(forKey key: String, isStream: Bool = false, _ deliver: @escaping Delivery) -> ObservationToken {
        let id = state.withLock { state in
            state.nextID += 1
            state.keyObservers[key, default: [:]][state.nextID] = Registration(deliver: deliver, isStream: isStream)
            return state.nextID
        }
        return ObservationToken { [weak self] in self?.unregister(id, key: key) }
    }

    /// Removes every storage observer closure (streams stay).
    func removeAllStorageObservers() {
        state.withLock { $0.storageObservers = $0.storageObservers.filter(\.value.isStream) }
    }

    /// Removes every observer closure of `key` (streams stay).
    func removeKeyObservers(forKey key: String) {
        state.withLock { state in
            let streams = state.keyObservers[key]?.filter(\.value.isStream) ?? [:]
            state.keyObservers[key] = streams.isEmpty ? nil : streams
        }
    }

    /// Removes every key observer closure (streams stay).
    func removeAllKeyObservers() {
        state.withLock { state in
            state.keyObservers = state.keyObservers.compactMapValues { observers in
                let streams = observers.filter(\.value.isStream)
                return streams.isEmpty ? nil : streams
            }
        }
    }

    /// Waits until every delivery queued so far has run; for tests.
    func waitUntilDelivered() {
        deliveryQueue.sync {}
    }

    private func isRegistered(_ id: Int, key: String?) -> Bool {
        state.withLock { state in
            if let key { return state.keyObservers[key]?[id] != nil }
            return state.storageObservers[id] != nil
        }
    }

    private func unregister(_ id: Int, key: String?) {
        state.withLock { state in
            guard let key else {
                state.storageObservers[id] = nil
                return
            }
            state.keyObservers[key]?[id] = nil
            if state.keyObservers[key]?.isEmpty == true { state.keyObservers[key] = nil }
        }
    }
}
