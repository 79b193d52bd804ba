import Foundation
import StashEngine

/// Changes of a store waiting for the main actor, in commit order.
///
/// The observation center calls an observer on the writer's thread, one change at a time in commit
/// order. ``ObservableValue`` and ``ObservableCollection`` append each change here and have the main actor
/// drain the inbox: every drain applies everything received so far, in order, so it does not matter
/// in which order the main actor runs the drains, and a drain run after the object's own write (which
/// has been received by the time the write returns, Contract item 12) shows that write at once.
final class MainActorInbox<Change: Sendable>: Sendable {
    private struct State {
        var changes: [Change] = []
        var drainScheduled = false
    }

    private let state = Locked(State())
    /// Whether only the latest change matters (a value's): then the inbox holds one change at most,
    /// however long the main actor is busy.
    private let keepsLatestOnly: Bool

    init(keepsLatestOnly: Bool = false) {
        self.keepsLatestOnly = keepsLatestOnly
    }

    /// Appends `change`; true when no drain is scheduled yet (the caller then schedules one).
    func append(_ change: Change) -> Bool {
        state.withLock { state in
            if keepsLatestOnly { state.changes.removeAll(keepingCapacity: true) }
            state.changes.append(change)
            defer { state.drainScheduled = true }
            return !state.drainScheduled
        }
    }

    /// Everything received so far, oldest first; the next ``append(_:)`` asks for a drain again.
    func takeAll() -> [Change] {
        state.withLock { state in
            state.drainScheduled = false
            defer { state.changes.removeAll() }
            return state.changes
        }
    }
}

/// Schedules a drain of an inbox on the main actor, for an owner that may be gone by then.
final class WeakMainActorOwner: Sendable {
    /// The drain: set on the main actor once the owner is initialized, holding it weakly.
    private let drainClosure = Locked<(@MainActor () -> Void)?>(nil)

    var drain: (@MainActor () -> Void)? {
        get { drainClosure.withLock { $0 } }
        set { drainClosure.withLock { $0 = newValue } }
    }

    /// Runs the drain on the main actor, soon.
    func scheduleDrain() {
        Task { @MainActor in self.drain?() }
    }
}

extension Storage {
    /// The observers of this store's folder, shared by every view and storage of it.
    var observationCenter: ObservationCenter { hybridStorage.engine.observers }
}
