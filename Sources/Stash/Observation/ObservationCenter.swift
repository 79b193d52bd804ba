import Foundation
import StashEngine

/// The observers of one store (shared by every view and instance on its directory).
///
/// The store publishes each committed change on its queue; the change is bound there to every
/// observer registered at that moment and handed to a ``DeliveryLine``, which the caller of the
/// mutating call drains once it is off the queue, before the call returns (or its completion runs).
/// So observers are called synchronously with respect to the call, in commit order, never on the
/// store's queue, and may call the storage, this store or another, from their closures (Contract items 4 and 12;
/// ``DeliveryLine`` says what a call made from inside a closure waits for).
final class ObservationCenter: Sendable {
    /// Delivers one commit (every event of it at once) to one observer.
    typealias Delivery = @Sendable (StoreCommit) -> Void
    /// Binds a registration to an event when it is committed: the delivery returned holds the
    /// observer strongly, so an observer released right after the change still gets it; nil when
    /// the observer (or its storage) is gone, which unregisters it.
    typealias Binding = @Sendable () -> Delivery?

    private struct Registration {
        let bind: Binding
        /// Whether the `removeAll…` calls leave it registered: an `AsyncStream` ends only when it is
        /// dropped or cancelled (its `for await` loop would wait forever), and ``ObservableValue`` and
        /// ``ObservableCollection`` stop only when released (they would freeze silently). Those calls
        /// are for dropping one's own observer closures.
        let isProtected: Bool
    }

    private struct State {
        var nextID = 0
        var storageObservers: [Int: Registration] = [:]
        var keyObservers: [String: [Int: Registration]] = [:]
    }

    private let state = Locked(State())
    private let line = DeliveryLine()
    /// 1 while any observer is registered: set under the lock with every registration and removal
    /// (``change(_:)``), read without it, so that a write nobody observes (the common case) asks
    /// nothing under the lock.
    private let observed = AtomicWord()

    /// Whether any observer is registered (an event nobody hears need not be built).
    var hasObservers: Bool { observed.value != 0 }

    func hasKeyObservers(_ key: String) -> Bool {
        hasObservers && state.withLock { $0.keyObservers[key] != nil }
    }

    /// Called after each registration and removal (``callWhenRegistrationsChange(_:)``).
    private let registrationsChanged = Locked<(@Sendable () -> Void)?>(nil)

    /// Calls `body` after every registration and removal of an observer, outside the lock: the engine
    /// then marks what it has read of other processes' changes while anything observes the store, and
    /// stops once nothing does (`DiskEngine.observersChanged()`).
    func callWhenRegistrationsChange(_ body: @escaping @Sendable () -> Void) {
        registrationsChanged.withLock { $0 = body }
    }

    /// Changes the registrations, and ``observed`` with them.
    private func change<Result>(_ body: (inout State) -> Result) -> Result {
        defer { registrationsChanged.withLock { $0 }?() }
        return state.withLock { state in
            let result = body(&state)
            observed.store(state.storageObservers.isEmpty && state.keyObservers.isEmpty ? 0 : 1)
            return result
        }
    }

    /// Binds `event` to every observer it concerns and queues it for delivery (on the store's queue,
    /// at the change's commit, so the order of publishing is the commit order).
    func publish(_ event: StoreEvent) {
        // Most stores have no observers: then no array is made for the event (one look under the lock).
        guard hasObservers else { return }
        publish([event])
    }

    /// Publishes the events of one commit (a batch) as one change: each observer gets them in one
    /// delivery, so an observer that shows a state (``ObservableCollection``) never shows half of it.
    func publish(_ events: [StoreEvent]) {
        // Stash's own bookkeeping keys (``ReservedKeys``) are no change of the app's: left out, and
        // a commit of nothing else (a migration's last batch, say) is no change at all.
        guard !events.isEmpty, hasObservers else { return }
        let events = events.contains(where: \.touchesReservedKeys) ? events.compactMap(\.withoutReservedKeys) : events
        guard !events.isEmpty else { return }
        let targets: [(id: Int, key: String?, bind: Binding)] = state.withLock { state in
            // Most stores have no observers: publishing then costs one look under the lock.
            guard !state.storageObservers.isEmpty || !state.keyObservers.isEmpty else { return [] }
            var targets = state.storageObservers.sorted { $0.key < $1.key }.map { ($0.key, String?.none, $0.value.bind) }
            var touched = Set<String>()
            for key in events.lazy.flatMap(\.keys) where touched.insert(key).inserted {
                for (id, registration) in (state.keyObservers[key] ?? [:]).sorted(by: { $0.key < $1.key }) {
                    targets.append((id, key, registration.bind))
                }
            }
            return targets
        }
        guard !targets.isEmpty else { return }
        var bound: [(id: Int, key: String?, deliver: Delivery)] = []
        for target in targets {
            guard let deliver = target.bind() else {
                unregister(target.id, key: target.key)
                continue
            }
            bound.append((target.id, target.key, deliver))
        }
        guard !bound.isEmpty else { return }
        line.enqueue { sequence in
            let commit = StoreCommit(sequence: sequence, events: events)
            return bound.map { target in
                {
                    // A token cancelled since the commit stops delivery (a call already running finishes).
                    if self.isRegistered(target.id, key: target.key) { target.deliver(commit) }
                }
            }
        }
    }

    /// The number of the last change published; pass it to ``deliver(through:)`` once off the queue.
    var lastPublished: UInt64 { line.lastEnqueued }

    /// Whether every change up to `mark` has reached its observers.
    func isDelivered(through mark: UInt64) -> Bool {
        line.isDelivered(through: mark)
    }

    /// Returns once every change up to `mark` has reached its observers; from inside an observer
    /// closure, hands them on instead of waiting for another thread (see ``DeliveryLine``).
    /// Never call it on the store's queue.
    func deliver(through mark: UInt64) {
        line.deliver(through: mark)
    }

    /// Registers an observer of every change; a `isProtected` one stays through ``removeAllStorageObservers()``.
    func addStorageObserver(isProtected: Bool = false, _ bind: @escaping Binding) -> ObservationToken {
        let id = change { state in
            state.nextID += 1
            state.storageObservers[state.nextID] = Registration(bind: bind, isProtected: isProtected)
            return state.nextID
        }
        return ObservationToken { [weak self] in self?.unregister(id, key: nil) }
    }

    /// Registers an observer of `key`; a `isProtected` one stays through the `remove…` calls.
    func addKeyObserver(forKey key: String, isProtected: Bool = false, _ bind: @escaping Binding) -> ObservationToken {
        let id = change { state in
            state.nextID += 1
            state.keyObservers[key, default: [:]][state.nextID] = Registration(bind: bind, isProtected: isProtected)
            return state.nextID
        }
        return ObservationToken { [weak self] in self?.unregister(id, key: key) }
    }

    /// Removes every storage observer closure (streams and observable objects stay).
    func removeAllStorageObservers() {
        change { $0.storageObservers = $0.storageObservers.filter(\.value.isProtected) }
    }

    /// Removes every observer closure of `key` (streams and observable objects stay).
    func removeKeyObservers(forKey key: String) {
        change { state in
            let kept = state.keyObservers[key]?.filter(\.value.isProtected) ?? [:]
            state.keyObservers[key] = kept.isEmpty ? nil : kept
        }
    }

    /// Removes every key observer closure (streams and observable objects stay).
    func removeAllKeyObservers() {
        change { state in
            state.keyObservers = state.keyObservers.compactMapValues { observers in
                let kept = observers.filter(\.value.isProtected)
                return kept.isEmpty ? nil : kept
            }
        }
    }

    /// Delivers every change published so far; for tests.
    func waitUntilDelivered() {
        deliver(through: lastPublished)
    }

    /// The number of registered observers (closures and streams); for tests.
    var registrationCount: Int {
        state.withLock { state in state.storageObservers.count + state.keyObservers.values.reduce(0) { $0 + $1.count } }
    }

    private func isRegistered(_ id: Int, key: String?) -> Bool {
        state.withLock { state in
            if let key { return state.keyObservers[key]?[id] != nil }
            return state.storageObservers[id] != nil
        }
    }

    private func unregister(_ id: Int, key: String?) {
        change { state in
            guard let key else {
                state.storageObservers[id] = nil
                return
            }
            state.keyObservers[key]?[id] = nil
            if state.keyObservers[key]?.isEmpty == true { state.keyObservers[key] = nil }
        }
    }
}

/// The events of one commit (one call, or one batch), in order, with the commit's number on the
/// store's delivery line: a snapshot read on the queue after commit `n` already holds every commit
/// numbered up to `n` (``ObservationCenter/lastPublished``).
struct StoreCommit: Sendable {
    let sequence: UInt64
    let events: [StoreEvent]
}
