import Foundation

/// Two processes writing one store at once: two writer processes (``StoreProcess``) each write N new
/// 200-byte values — Stash with `DiskConfig(allowsWritersInOtherProcesses: true)` against SQLite as
/// its users run it from several processes (WAL, `synchronous=NORMAL`, `busy_timeout`, prepared
/// statements, one transaction per write). Timed whole: from telling both processes to go (each has
/// its store open and its keys built) until both are done, ÷ the writes of both. New processes every
/// round, new keys every round; the engines interleaved round by round. Beside it, the same 2 × N
/// writes by one Stash process alone (with the setting): what sharing the store costs the two.
enum TwoWritersScenario {
    static let label = "two processes writing, 200 B data"
    static let peer = "SQLite two processes"
    static let alone = "one process (Stash)"
    /// The sides: engine, processes, folder.
    static let sides = [("Stash", 2, "Stash"), ("SQLite", 2, "SQLite"), ("Stash", 1, "StashAlone")]

    static func run(bench: Bench) throws {
        let wanted = [peer, alone].map { bench.settings.wants("\(label) vs \($0)") }
        guard wanted.contains(true) else { return }
        let writes = bench.settings.twoWriterWrites
        print("== \(label): Stash (writers in other processes allowed) vs SQLite (WAL, busy_timeout "
            + "\(StoreProcess.sqliteBusyTimeout) ms), vs one Stash process; 2 processes × \(writes) writes a round")
        let root = try bench.freshDirectory("two-writers")
        defer { try? FileManager.default.removeItem(at: root) }
        let folders = sides.map { root.appendingPathComponent($0.2, isDirectory: true) }
        // Created here first, so the two processes open a store that exists (SQLite: its table, in WAL mode).
        let fixture = EngineFixture(count: 1)
        _ = try StashEngineSide(in: folders[0], fixture, allowsWritersInOtherProcesses: true)
        _ = try SQLiteEngineSide(in: folders[1], fixture, busyTimeout: StoreProcess.sqliteBusyTimeout)
        _ = try StashEngineSide(in: folders[2], fixture, allowsWritersInOtherProcesses: true)
        let samples = try Measure.interleaved(rounds: bench.settings.twoWriterRounds, sides.indices.map { side in
            { round in
                try timeRound(sides[side].0, processes: sides[side].1, folder: folders[side], first: round * 2 * writes,
                              writes: 2 * writes / sides[side].1)
            }
        })
        if wanted[0] {
            bench.add(Row("\(label) vs \(peer)", stash: samples[0], baseline: samples[1], vs: peer, target: .ratio(0.5)))
        }
        if wanted[1] {
            bench.add(Row("\(label) vs \(alone)", stash: samples[0], baseline: samples[2], vs: "Stash, one process"))
        }
    }

    /// `processes` writer processes on `folder`, `writes` each, keys from `first` on: wall time from
    /// `go` to every `done`, ÷ their writes.
    private static func timeRound(_ engine: String, processes: Int, folder: URL, first: Int, writes: Int) throws -> Double {
        let children = try (0..<processes).map { child in
            try ChildProcess(["--store-process", "writer", engine, folder.path, String(first + child * writes), String(writes)])
        }
        for child in children { try child.expect("ready") }
        let start = ContinuousClock.now
        for child in children { try child.send("go") }
        for child in children { try child.expect("done") }
        let elapsed = ContinuousClock.now - start
        for child in children { try child.finish() }
        return elapsed.nanoseconds / Double(processes * writes)
    }
}
