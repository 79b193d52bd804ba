public import Foundation

/// How long a test waits for something that should happen before it calls it lost.
///
/// A deadline in a test only bounds how long a *failing* test takes: a passing test never reaches
/// it. CI shares a 2-core machine with several builds (load averages of 12–28), where a step that
/// takes 50 ms idle can take minutes, so every wait in the tests uses this one generous bound
/// instead of a guess at how slow the machine may be. Never a stand-in for time passing.
public enum TestDeadline {
    /// Seconds a test waits for an event (a child process, an observer, a reply, a background job).
    public static let long: TimeInterval = 600

    /// ``long`` from now, for `DispatchSemaphore`/`DispatchGroup` waits.
    public static var fromNow: DispatchTime { .now() + long }

    /// Minutes for Swift Testing's `.timeLimit`: above ``long``, so that a wait that runs out
    /// reports what it waited for before the time limit cuts the test off.
    public static let timeLimitMinutes = 15

    /// Checks `condition` every millisecond until it holds or ``long`` has passed: a wait for another
    /// thread's or process's progress that no hook reports (a bound on a lost event, not a sleep
    /// standing in for time).
    /// - Returns: Whether `condition` held.
    public static func poll(_ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(long)
        while true {
            if try condition() { return true }
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.001)
        }
    }

    /// ``poll(_:)`` for async code: suspends between checks instead of blocking a thread of the
    /// cooperative pool (two on a 2-core machine), which the awaited tasks may need.
    public static func suspendUntil(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(long)
        while true {
            if try await condition() { return true }
            if Date() >= deadline { return false }
            try await Task.sleep(nanoseconds: 1_000_000)
        }
    }
}
