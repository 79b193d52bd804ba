import Foundation
import Stash
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `stash check [--repair]`, and which commands open a store for reading only.

extension ExitStatus {
    /// `check`: damage was found (and, with `--repair`, is still there after the repair).
    static let damaged: Int32 = 5
}

extension Invocation {
    /// Whether the store is opened for reading only: for the commands that only read (`get`, `ls`,
    /// `stats`) and for `check` without `--repair`.
    var opensReadOnly: Bool {
        [.get, .ls, .stats].contains(command) || (command == .check && !repair)
    }
}

extension StoreCommands {
    /// `check [--repair]`: reads every record and value and verifies its checksum; prints what it
    /// found. With `--repair`, drops the damaged entries and rewrites the segments, then checks again.
    /// - Returns: 0 when the store is (now) clean, ``ExitStatus/damaged`` otherwise.
    func check() throws -> Int32 {
        let progress = TerminalProgress(verb: invocation.repair ? "repairing" : "checking")
        let report = invocation.repair ? try storage.repair(progress: progress.report) : try storage.check(progress: progress.report)
        progress.finish()
        print("checked \(plural(report.segments, "segment")), \(plural(report.records, "record")), "
            + "\(plural(report.entries, "entry", "entries")) in \(storage.path)")
        if report.isClean {
            print("no damage found")
            return ExitStatus.success
        }
        print("found \(plural(report.problems.count, "problem")):")
        report.problems.forEach { print("  - \($0)") }
        guard invocation.repair else {
            print("run 'stash check --repair' to drop what is damaged")
            return ExitStatus.damaged
        }
        let after = try storage.check()
        print("repaired: dropped \(plural(report.damagedKeys.count, "damaged entry", "damaged entries")); "
            + "\(plural(after.entries, "entry", "entries")) remain" + (after.isClean ? ", no damage left" : ", still damaged:"))
        after.problems.forEach { print("  - \($0)") }
        return after.isClean ? ExitStatus.success : ExitStatus.damaged
    }
}

/// A progress line on the terminal (`checking: 41% (4096/10000 entries)`), rewritten in place on
/// stderr; silent when stderr is not a terminal, so scripts and pipes see only the result.
final class TerminalProgress: Sendable {
    private let verb: String
    private let isTerminal = isatty(STDERR_FILENO) == 1

    init(verb: String) {
        self.verb = verb
    }

    /// The callback to hand to a long operation: called with the work done so far and its total.
    var report: (@Sendable (Int, Int) -> Void)? {
        guard isTerminal else { return nil }
        let verb = verb
        return { done, total in
            let percent = total > 0 ? done * 100 / total : 100
            try? FileHandle.standardError.write(contentsOf: Data("\r\(verb): \(percent)% (\(done)/\(total) entries)\u{1B}[K".utf8))
        }
    }

    /// Clears the progress line.
    func finish() {
        if isTerminal { try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8)) }
    }
}

extension TerminalProgress {
    /// Runs `work` (one long call into the library, which reports no steps of its own), showing on a
    /// terminal how long it has been running (`trimming… 3 s`) from the first second on; silent when
    /// stderr is not a terminal.
    static func during<Result>(_ verb: String, _ work: () throws -> Result) rethrows -> Result {
        guard isatty(STDERR_FILENO) == 1 else { return try work() }
        let started = DispatchTime.now()
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        timer.schedule(deadline: .now() + 1, repeating: 0.5)
        timer.setEventHandler {
            let seconds = (DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1_000_000_000
            try? FileHandle.standardError.write(contentsOf: Data("\r\(verb)… \(seconds) s\u{1B}[K".utf8))
        }
        timer.resume()
        defer {
            timer.cancel()
            try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K".utf8))
        }
        return try work()
    }
}
