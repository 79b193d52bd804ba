import Foundation

/// Mutable state behind one lock, reached only through ``withLock(_:)``.
///
/// `Synchronization.Mutex` would do on Linux but needs macOS 15 / iOS 18, more than the package
/// asks of its users; `NSLock` is available everywhere and cheap enough for counters and small maps.
final class LockedBox<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is only ever touched between lock() and unlock().
    private let lock = NSLock()
    private var state: State

    init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with exclusive access to the state. Never call back into the same box from `body`.
    func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
