import Foundation

/// Work run on several threads started together (`DispatchQueue.concurrentPerform`), timed as a whole:
/// the rows that compare two threads with one (`ParallelGetScenarios`, `ParallelSetScenarios`,
/// `ParallelMemoryHitScenario`).
enum TogetherOnThreads {
    /// Runs `body(thread)` for each of `threads` threads at once; returns the wall time in ns ÷
    /// `operations` (every thread's together). The first error a thread throws ends the row.
    static func nanosecondsPerOperation(threads: Int, operations: Int, what: String,
                                        _ body: @Sendable (_ thread: Int) throws -> Void) throws -> Double {
        let failure = Shared(String?.none)
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            do {
                try body(thread)
            } catch {
                failure.set("\(error)")
            }
        }
        let elapsed = ContinuousClock.now - start
        if let message = failure.get() { throw BenchError("\(what): \(message)") }
        return elapsed.nanoseconds / Double(operations)
    }
}
