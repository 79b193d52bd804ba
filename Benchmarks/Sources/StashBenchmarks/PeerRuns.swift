import Foundation
import Stash

/// One step of a lineup: its label (what `--filter` matches; the rows add `vs <peer>`) and what it does.
struct PeerStep<T: Sendable> {
    var label: String
    var run: (Lineup<T>, Bench, String) throws -> Void
}

/// Runs `steps` in order on one lineup of fresh stores (`contenders`: Stash first, then its peers).
/// The first step writes every key; when `--filter` skips it, the keys are written untimed so the
/// later steps find them.
func runLineup<T>(_ bench: Bench, _ kind: Kind<T>, keyCount: Int, _ contenders: [(String, (URL) throws -> any Side<T>)],
                  _ steps: [PeerStep<T>]) throws {
    // "SQLite + dictionary" is how the memory-hit rows name the SQLite side.
    let peers = contenders.dropFirst().flatMap { $0.0 == "SQLite" ? ["SQLite", "SQLite + dictionary"] : [$0.0] }
    guard steps.contains(where: { bench.settings.wants($0.label, peers: peers) }) else { return }
    let folder = "peers-" + kind.name.filter { $0.isLetter || $0.isNumber }
    let lineup = try Lineup(kind, in: try bench.freshDirectory(folder), keyCount: keyCount, contenders)
    defer { lineup.close() }
    print("== \(kind.name): \(lineup.names[0]) vs \(lineup.names.dropFirst().joined(separator: ", ")), \(keyCount) keys")
    for (position, step) in steps.enumerated() {
        if bench.settings.wants(step.label, peers: peers) {
            try step.run(lineup, bench, step.label)
        } else if position == 0 {
            try lineup.populate()
        }
    }
}

/// The rows of the peers a user would pick instead of Stash (issue #16's targets, Stash ÷ peer).
func runPeers(_ bench: Bench) throws {
    let settings = bench.settings
    typealias Scenario<T: Sendable> = (Lineup<T>, Bench, String, [Target]) throws -> Void
    func step<T>(_ label: String, _ scenario: @escaping Scenario<T>, _ targets: [Target]) -> PeerStep<T> {
        PeerStep(label: label) { try scenario($0, $1, $2, targets) }
    }

    // The engine: DiskStorage<Data>, 200 B values, against LevelDB, LMDB and SQLite reached with the
    // least wrapper; then what those wrappers cost against the same peers driven from C.
    try EnginePeerScenarios.run(bench: bench)
    try ParallelGetScenarios.run(bench: bench)
    try ParallelSetScenarios.run(bench: bench)
    try ParallelMemoryHitScenario.run(bench: bench)
    try WrapperOverheadScenario.run(bench: bench)
    // The "Other processes welcome" rows: the multi-process setting, reader and writer processes.
    try MultiProcessScenarios.run(bench: bench)
    try TwoWritersScenario.run(bench: bench)

    // Issue #31: Stash's JSON coder against Foundation's.
    try CoderScenarios.run(bench: bench)

    // The app: Storage<Payload> (Stash's JSON coder, its default) against SQLite with a dictionary in
    // front, with Foundation's coder (what a SQLite user has) and with Stash's (the engines alone).
    let codable = Kind<Payload>.codable
    try runLineup(bench, codable, keyCount: settings.keyCount, [
        ("Stash", { try StashStorageSide(codable, in: $0) }), ("SQLite", { try SQLiteSide(codable.codec, in: $0) }),
        (CoderScenarios.sqliteStashCoder, { try SQLiteSide(Codec<Payload>.stashJSON(), in: $0) }),
    ], [
        step("set new key, codable", PeerScenarios.setNew, [.ratio(0.5)]),
        step("overwrite, codable", PeerScenarios.overwrite, [.ratio(0.5)]),
        step("memory hit, codable", PeerScenarios.memoryHit, [.ratio(1.0)]),
        step("80/20 read/write, 1 thread", { try PeerScenarios.mixed($0, bench: $1, label: $2, threads: 1, targets: $3) },
             [.ratio(0.5)]),
        step("80/20 read/write, 2 threads", { try PeerScenarios.mixed($0, bench: $1, label: $2, threads: 2, targets: $3) },
             [.ratio(0.5)]),
        // Issue #32: ≤ 0.7× SQLite with the same coder (the engines alone).
        step("disk hit, cold memory, codable", PeerScenarios.coldHit, [.ratio(0.5), .ratio(0.7)]),
        step("existsObject hit, cold memory", PeerScenarios.exists, [.absolute(1_000)]),
        step("removeObject, codable", PeerScenarios.remove, [.ratio(0.5)]),
    ])

    // Issue #31: the same value as GRDB 7's users store it, a Codable record in a table of columns,
    // in a DatabaseQueue and in a DatabasePool (GRDB's defaults).
    try runLineup(bench, codable, keyCount: settings.keyCount, [
        ("Stash", { try StashStorageSide(codable, in: $0) }),
        ("GRDB DatabaseQueue", { try GRDBSide(pool: false, in: $0) }), ("GRDB DatabasePool", { try GRDBSide(pool: true, in: $0) }),
    ], [
        step("set new key, codable record", PeerScenarios.setNew, [.ratio(0.5), .ratio(0.5)]),
        step("overwrite, codable record", PeerScenarios.overwrite, [.ratio(0.5), .ratio(0.5)]),
        step("disk hit, cold memory, codable record", PeerScenarios.coldHit, [.ratio(0.5), .ratio(0.5)]),
    ])

    // Large values: Storage<Data>, 100 KB, against SQLite (blobs) with a dictionary in front.
    let large = Kind<Data>.data
    try runLineup(bench, large, keyCount: settings.largePeerKeys, [
        ("Stash", { try StashStorageSide(large, in: $0) }), ("SQLite", { try SQLiteSide(large.codec, in: $0) }),
    ], [
        step("set new key, 100 KB data", PeerScenarios.setNew, [.ratio(0.7)]),
        step("overwrite, 100 KB data", PeerScenarios.overwrite, [.ratio(0.7)]),
        step("memory hit, 100 KB data", PeerScenarios.memoryHit, [.ratio(1.0)]),
        step("disk hit, cold memory, 100 KB data", PeerScenarios.coldHit, [.ratio(0.7)]),
        step("removeObject, 100 KB data", PeerScenarios.remove, [.ratio(0.7)]),
    ])

    for threads in [1, 4] {
        let label = "durable writes, 200 B data, \(threads) thread\(threads == 1 ? "" : "s")"
        if settings.wants(label, peers: [DurableScenarios.sqlite, DurableScenarios.leveldb]) {
            print("== \(label)")
            try DurableScenarios.run(bench: bench, label: label, threads: threads)
        }
    }
    for durable in [false, true] where BatchScenarios.wanted(bench, durable: durable) {
        try BatchScenarios.run(bench: bench, durable: durable)
    }
    let expiredLabel = "removeExpiredObjects, \(settings.keyCount) entries half expired"
    if settings.wants(expiredLabel, peers: ["SQLite"]) {
        print("== removeExpiredObjects vs SQLite")
        try ExpiryPeerScenario.run(bench: bench, label: expiredLabel)
    }
    if PrefixObjectsScenarios.wanted(bench) { try PrefixObjectsScenarios.run(bench: bench) }
    // Issue #34: update and transaction against object + setObject, SQLite's and GRDB's read-modify-write.
    if UpdateScenarios.wanted(bench) { try UpdateScenarios.run(bench: bench) }
    try EngineScaleScenarios.run(bench: bench)
}
