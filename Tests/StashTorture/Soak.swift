import Foundation
import Stash
import StashTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `StashTorture soak DIR --seconds N [--seed S] [--stash PATH] [--without-deletions]`: a soak of a store shared by processes,
// under faults, with every read checked against the writers' acknowledged logs (SoakCheck.swift).
//
// For N seconds: two writer processes (`allowsWritersInOtherProcesses`), one read-only reader process
// and the `stash` CLI's `get` (the `stash` built beside this executable, or PATH) work on one store
// at DIR, while every 0.5–2 s one fault strikes: a writer or the reader killed (SIGKILL; a new one
// takes its place), stopped for 0.2–1.5 s (SIGSTOP, then SIGCONT), `stash-shared` deleted, or a
// `removeAll` by a writer (`--without-deletions`: never the deletion). Then the writers are told to
// finish, the logs are checked, and one summary is printed: calls, faults, and every kind of wrong read
// with examples. Exit status 0 when every read was right, 3 when one was not, 1 on another error. The
// logs stay in DIR.logs.

/// The processes of one soak and their logs.
private final class SoakRun {
    let path: String
    let logs: String
    let torture: URL
    var random: SeededGenerator
    var writers: [(child: ChildProcess, source: String)] = []
    var reader: (child: ChildProcess, source: String)?
    var sources: [String] = []
    var nextTag: UInt64 = 1
    var faults: [String: Int] = [:]
    /// Whether `stash-shared` is never deleted (`--without-deletions`: the other faults alone).
    let withoutDeletions: Bool

    init(path: String, seed: UInt64, torture: URL, withoutDeletions: Bool) {
        (self.path, self.logs, self.torture, random) = (path, path + ".logs", torture, SeededGenerator(seed: seed))
        self.withoutDeletions = withoutDeletions
    }

    func logPath(_ source: String) -> String { logs + "/" + source + ".log" }

    func startWriter() throws -> (child: ChildProcess, source: String) {
        let tag = nextTag
        nextTag += 1
        let source = "writer-\(tag)"
        sources.append(source)
        let child = try ChildProcess(torture, ["soak-writer", path, "--tag", String(tag), "--seed", String(random.next() >> 24),
                                               "--log", logPath(source)], input: .held)
        return (child, source)
    }

    func startReader() throws -> (child: ChildProcess, source: String) {
        let source = "reader-\(nextTag)"
        nextTag += 1
        sources.append(source)
        let child = try ChildProcess(torture, ["soak-reader", path, "--seed", String(random.next() >> 24), "--log", logPath(source)])
        return (child, source)
    }

    /// One fault, chosen at random.
    func strike() throws {
        let writer = random.below(writers.count)
        var fault = random.below(6)
        if withoutDeletions, fault == 4 { fault = 2 }
        switch fault {
        case 0:
            writers[writer].child.kill()
            writers[writer] = try startWriter()
            faults["writer killed", default: 0] += 1
        case 1:
            reader?.child.kill()
            reader = try startReader()
            faults["reader killed", default: 0] += 1
        case 2, 3:
            let isWriter = random.below(2) == 0
            let child = isWriter ? writers[writer].child : reader!.child
            child.signal(SIGSTOP)
            usleep(UInt32(200_000 + random.below(1_300_000)))
            child.signal(SIGCONT)
            faults[isWriter ? "writer stopped" : "reader stopped", default: 0] += 1
        case 4:
            if unlink(path + "/stash-shared") == 0 {
                soakNote("D \(monotonicNanoseconds())")
                faults["stash-shared deleted", default: 0] += 1
            }
        default:
            writers[writer].child.send("clear\n")
            faults["removeAll", default: 0] += 1
        }
    }

    /// The orchestrator's own log: `D TIME` per deletion of `stash-shared`.
    func soakNote(_ line: String) { SoakLog(logPath("faults")).line(line) }
}

/// Runs `stash get` in a loop until `stop`, logging each read as a reader would (source `cli`).
private func runCLIReads(_ stash: URL, path: String, seed: UInt64, log: SoakLog, stop: Locked<Bool>, calls: Locked<Int>) {
    var random = SeededGenerator(seed: seed)
    while !stop.withLock({ $0 }) {
        let key = SoakKeys.random(&random)
        let start = monotonicNanoseconds()
        guard let run = try? ChildProcess.run(stash, ["--dir", path, "get", "--", key], deadline: TestDeadline.long) else { return }
        let end = monotonicNanoseconds()
        let found = switch run.status {
        case 0: TortureValue.sequence(of: run.stdout, key: key).map(String.init) ?? "torn"
        case 3: "missing"
        default: "error:status-\(run.status):" + soakErrorName(run.stderr)
        }
        log.line("R \(key) \(start) \(end) \(found)")
        calls.withLock { $0 += 1 }
    }
}

func runSoak(_ path: String, seconds: Double, seed: UInt64, stash: URL?, withoutDeletions: Bool) throws -> Never {
    guard let torture = Bundle.main.executableURL else { fail("cannot find this executable", status: 1) }
    let run = SoakRun(path: path, seed: seed, torture: torture, withoutDeletions: withoutDeletions)
    try FileManager.default.createDirectory(atPath: run.logs, withIntermediateDirectories: true)
    // The store exists before any process opens it (a reader opens only a store).
    do { _ = try openStore(path, maxSize: 0, shared: true) }
    run.writers = [try run.startWriter(), try run.startWriter()]
    run.reader = try run.startReader()
    let stop = Locked(false), cliCalls = Locked(0)
    let cliDone = DispatchSemaphore(value: 0)
    let stashURL = stash ?? torture.deletingLastPathComponent().appendingPathComponent("stash")
    let hasCLI = FileManager.default.isExecutableFile(atPath: stashURL.path)
    if hasCLI {
        let log = SoakLog(run.logPath("cli"))
        let seed = run.random.next() >> 24
        Thread.detachNewThread {
            runCLIReads(stashURL, path: path, seed: seed, log: log, stop: stop, calls: cliCalls)
            cliDone.signal()
        }
    }
    let began = Date()
    while Date().timeIntervalSince(began) < seconds {
        usleep(UInt32(500_000 + run.random.below(1_500_000)))
        try run.strike()
    }
    stop.withLock { $0 = true }
    for writer in run.writers { writer.child.closeInput() }
    for writer in run.writers where !writer.child.wait(upTo: TestDeadline.long) { fail("\(writer.source) did not finish", status: 1) }
    run.reader?.child.kill()
    if hasCLI { cliDone.wait() }

    var history = SoakHistory()
    for source in run.sources + (hasCLI ? ["cli"] : []) {
        history.add(log: (try? String(contentsOfFile: run.logPath(source), encoding: .utf8)) ?? "", source: source)
    }
    let faultLog = (try? String(contentsOfFile: run.logPath("faults"), encoding: .utf8)) ?? ""
    history.sharedDeletions = faultLog.split(separator: "\n").compactMap { $0.hasPrefix("D ") ? UInt64($0.dropFirst(2)) : nil }
    let report = history.check()
    let elapsed = Date().timeIntervalSince(began)
    emit("soak: \(Int(elapsed)) s, seed \(seed), store \(path), logs \(run.logs)")
    let cliReads = hasCLI ? "\(cliCalls.withLock { $0 }) of them by stash get" : "no stash tool found: no CLI reads"
    emit("calls: \(report.writes) writes begun (\(report.acknowledged) acknowledged), \(report.reads) reads (\(cliReads))")
    emit("faults: \(run.faults.values.reduce(0, +)) (" + run.faults.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") + ")")
    emit("read errors: \(report.readErrors.values.reduce(0, +))" + report.readErrors.sorted { $0.value > $1.value }.prefix(5).map { " [\($0.value)× \($0.key)]" }.joined())
    emit("wrong reads: \(report.totalViolations)" + report.violations.sorted { $0.key < $1.key }.map { " \($0.key) \($0.value)" }.joined()
         + (report.totalViolations > 0 ? ", the worst \(report.worstLag / 1_000_000) ms behind; by "
            + report.bySource.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
            + "; \(report.acrossDeletion) by a reader open across a deletion of stash-shared" : ""))
    for example in report.examples { emit("  " + example) }
    exit(report.totalViolations == 0 ? 0 : 3)
}

/// The `soak` command's arguments.
func soak(_ arguments: [String], option: (String) -> String?) throws -> Never {
    guard arguments.count >= 2, let seconds = Double(option("--seconds") ?? "300"), seconds > 0,
          let seed = UInt64(option("--seed") ?? "1") else {
        fail("usage: StashTorture soak DIR [--seconds N] [--seed S] [--stash PATH] [--without-deletions]", status: 2)
    }
    try runSoak(arguments[1], seconds: seconds, seed: seed, stash: option("--stash").map { URL(fileURLWithPath: $0) },
                withoutDeletions: arguments.contains("--without-deletions"))
}
