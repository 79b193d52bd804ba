import Foundation

/// Keeps the optimizer from dropping a read whose result is otherwise unused.
nonisolated(unsafe) var sink = 0

@inline(never)
func consume(_ value: Int) {
    sink &+= value
}

/// Timing: batches of operations, Stash and its baselines interleaved in one process.
enum Measure {
    /// Nanoseconds per operation of `body`, which performs `operations` operations.
    static func nsPerOp(_ operations: Int, _ body: () throws -> Void) rethrows -> Double {
        let start = ContinuousClock.now
        try body()
        return (ContinuousClock.now - start).nanoseconds / Double(max(operations, 1))
    }

    /// Runs round 0 of every side, then round 1, … and returns each side's samples.
    ///
    /// The side that goes first rotates every round (A B, B A, A B …), so slow drift — page
    /// cache, write-back, the other tenants of the machine — falls on every side alike.
    static func interleaved(rounds: Int, _ sides: [(Int) throws -> Double]) throws -> [[Double]] {
        var samples = Array(repeating: [Double](), count: sides.count)
        for round in 0..<rounds {
            for offset in 0..<sides.count {
                let side = (round + offset) % sides.count
                samples[side].append(try sides[side](round))
            }
        }
        return samples
    }

    /// Runs `body` on a task of the global executor and blocks the calling thread until it ends.
    /// The harness itself is synchronous; only the async/await scenario needs this.
    static func blocking<R: Sendable>(_ body: @escaping @Sendable () async throws -> R) throws -> R {
        let outcome = Shared<Result<R, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            let result: Result<R, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.set(result)
            done.signal()
        }
        done.wait()
        return try outcome.get()!.get()
    }
}

extension Duration {
    var nanoseconds: Double {
        Double(components.seconds) * 1e9 + Double(components.attoseconds) / 1e9
    }
}

extension Array where Element == Double {
    var median: Double {
        guard !isEmpty else { return .nan }
        let sorted = sorted()
        return count % 2 == 1 ? sorted[count / 2] : (sorted[count / 2 - 1] + sorted[count / 2]) / 2
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// What a row promises, from the benchmark issue's targets.
enum Target {
    case none
    /// Stash ÷ baseline at most this.
    case ratio(Double)
    /// Stash's own median at most this many nanoseconds, whatever the baseline.
    case absolute(Double)
    /// Stash's bytes at most the baseline's (the key's bytes) plus this many.
    case overBaseline(Double)

    /// The target as the table shows it, in the row's unit.
    func label(_ unit: Row.Unit) -> String {
        switch self {
        case .none: return "—"
        case .ratio(let limit): return String(format: "≤ %.1f×", limit)
        case .absolute(let limit): return "≤ " + Row.format(limit, unit)
        case .overBaseline(let limit): return String(format: "≤ key + %.0f B", limit)
        }
    }

    func isMet(stash: Double, baseline: Double) -> Bool? {
        switch self {
        case .none: return nil
        case .ratio(let limit): return stash / baseline <= limit
        case .absolute(let limit): return stash <= limit
        case .overBaseline(let limit): return stash - baseline <= limit
        }
    }
}

/// One line of the report.
struct Row {
    enum Unit: String {
        case nsPerOp = "ns/op"
        case ns = "ns"
        case bytes = "bytes/entry"
    }

    var scenario: String
    var stash: Double
    var baseline: Double
    var baselineName: String
    var unit: Unit = .nsPerOp
    var target: Target = .none

    /// A row from the samples of two interleaved sides.
    init(_ scenario: String, stash: [Double], baseline: [Double], vs baselineName: String,
         unit: Unit = .nsPerOp, target: Target = .none) {
        self.init(scenario, stash: stash.median, baseline: baseline.median, vs: baselineName, unit: unit, target: target)
    }

    init(_ scenario: String, stash: Double, baseline: Double, vs baselineName: String,
         unit: Unit = .nsPerOp, target: Target = .none) {
        self.scenario = scenario
        self.stash = stash
        self.baseline = baseline
        self.baselineName = baselineName
        self.unit = unit
        self.target = target
    }

    var ratio: Double { stash / baseline }
    var met: Bool? { target.isMet(stash: stash, baseline: baseline) }

    static func format(_ value: Double, _ unit: Unit) -> String {
        if unit == .bytes { return String(format: "%.0f B", value) }
        switch value {
        case ..<1_000: return String(format: "%.0f ns", value)
        case ..<1_000_000: return String(format: "%.2f µs", value / 1e3)
        case ..<1_000_000_000: return String(format: "%.2f ms", value / 1e6)
        default: return String(format: "%.2f s", value / 1e9)
        }
    }
}
