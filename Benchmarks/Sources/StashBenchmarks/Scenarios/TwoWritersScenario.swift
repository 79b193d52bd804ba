import Foundation

/// Two processes writing one store at once: two writer processes (``StoreProcess``) each write N new
/// 200-byte values — Stash with `DiskConfig(allowsWritersInOtherProcesses: true)` against SQLite as
/// its users run it from several processes (WAL, `synchronous=NORMAL`, `busy_timeout`, prepared
/// statements, one transaction per write). Timed whole: from telling both processes to go (each has
/// its store open and its keys built) until both are done, ÷ the writes of both. New processes every
/// round, new keys every round; the engines interleaved round by round.
enum TwoWritersScenario {
    static let label = "two processes writing, 200 B data"
    static let peer = "SQLite two processes"
    static let engines = ["Stash", "SQLite"]

    static func run(bench: Bench) throws {
        let name = "\(label) vs \(peer)"
        guard bench.settings.wants(name) else { return }
        let writes = bench.settings.twoWriterWrites
        print("== \(label): Stash (writers in other processes allowed) vs SQLite (WAL, busy_timeout "
            + "\(StoreProcess.sqliteBusyTimeout) ms), 2 processes × \(writes) writes a round")
        let root = try bench.freshDirectory("two-writers")
        defer { try? FileManager.default.removeItem(at: root) }
        let folders = engines.map { root.appendingPathComponent($0, isDirectory: true) }
        // Created here first, so the two processes open a store that exists (SQLite: its table, in WAL mode).
        let fixture = EngineFixture(count: 1)
        _ = try StashEngineSide(in: folders[0], fixture, allowsWritersInOtherProcesses: true)
        _ = try SQLiteEngineSide(in: folders[1], fixture, busyTimeout: StoreProcess.sqliteBusyTimeout)
        let samples = try Measure.interleaved(rounds: bench.settings.twoWriterRounds, engines.indices.map { engine in
            { round in try timeRound(engines[engine], folder: folders[engine], first: round * 2 * writes, writes: writes) }
        })
        bench.add(Row(name, stash: samples[0], baseline: samples[1], vs: peer, target: .ratio(0.5)))
    }

    /// Two writer processes on `folder`, keys `first..<first + 2 × writes` between them: wall time from
    /// `go` to both `done`, ÷ their writes.
    private static func timeRound(_ engine: String, folder: URL, first: Int, writes: Int) throws -> Double {
        let children = try (0..<2).map { child in
            try ChildProcess(["--store-process", "writer", engine, folder.path, String(first + child * writes), String(writes)])
        }
        for child in children { try child.expect("ready") }
        let start = ContinuousClock.now
        for child in children { try child.send("go") }
        for child in children { try child.expect("done") }
        let elapsed = ContinuousClock.now - start
        for child in children { try child.finish() }
        return elapsed.nanoseconds / Double(2 * writes)
    }
}
