import Foundation
import Stash

/// One logical write of 100 small Codable values (a page of results, a list and its index):
/// `Storage.setObjects` — one commit, one `fsync` when durable — against 100 single `setObject`
/// calls on the same `Storage`, and against one SQLite transaction of 100 prepared upserts with the
/// same JSON coder and a dictionary in front (WAL; `synchronous=NORMAL`, `FULL` when durable).
///
/// Every round writes 100 new keys on every side; keys and values are built before the clock
/// starts, the encoding is timed on every side. Figures are per batch of 100.
enum BatchScenarios {
    static let size = 100
    static let singles = "100 single setObject"

    static func label(durable: Bool) -> String {
        "batch of \(size) codable values" + (durable ? ", durable" : "")
    }

    static func sqliteName(durable: Bool) -> String {
        "SQLite transaction" + (durable ? ", synchronous=FULL" : "")
    }

    static func wanted(_ bench: Bench, durable: Bool) -> Bool {
        bench.settings.wants(label(durable: durable), peers: [singles, sqliteName(durable: durable)])
    }

    static func run(bench: Bench, durable: Bool) throws {
        let (label, sqliteName) = (label(durable: durable), sqliteName(durable: durable))
        print("== \(label)")
        let kind = Kind<Payload>.codable
        let directory = try bench.freshDirectory("batch" + (durable ? "-durable" : ""))
        defer { try? FileManager.default.removeItem(at: directory) }
        let stash = try Pair<Payload>.openStash(kind, in: directory.appendingPathComponent("Stash"), durable: durable)
        let sqlite = try SQLiteSide(kind.codec, in: directory.appendingPathComponent("SQLite"), durable: durable)
        let rounds = durable ? bench.settings.durableBatchRounds : bench.settings.batchRounds

        // `batch.user.000042.profile` for the batches, `single.…` for the single writes into the same store.
        func page(_ namespace: String, _ round: Int) -> [(key: String, value: Payload)] {
            (0..<size).map { offset in
                let index = round * size + offset
                return ("\(namespace).\(Fixtures.key(index))", kind.value(index, 0))
            }
        }
        let batches = (0..<rounds).map { page("batch", $0) }
        let batchObjects = batches.map { Dictionary(uniqueKeysWithValues: $0.map { ($0.key, $0.value) }) }
        let singlePages = (0..<rounds).map { page("single", $0) }

        let samples = try Measure.interleaved(rounds: rounds, [
            { round in try Measure.nsPerOp(1) { try stash.setObjects(batchObjects[round]) } },
            { round in
                try Measure.nsPerOp(1) { for (key, value) in singlePages[round] { try stash.setObject(value, forKey: key) } }
            },
            { round in try Measure.nsPerOp(1) { try sqlite.setAll(batches[round]) } },
        ])

        // Every side must hold what it wrote before its figure counts.
        for pair in (batches + singlePages).joined() where try stash.object(forKey: pair.key) != pair.value {
            throw BenchError("\(label): Stash lost \(pair.key)")
        }
        for pair in batches.joined() where try !sqlite.store.contains(pair.key) {
            throw BenchError("\(label): SQLite lost \(pair.key)")
        }

        let target: Target = .ratio(1.0)
        bench.add(Row("\(label) vs \(singles)", stash: samples[0], baseline: samples[1], vs: singles, unit: .ns, target: target))
        bench.add(Row("\(label) vs \(sqliteName)", stash: samples[0], baseline: samples[2], vs: sqliteName, unit: .ns,
                      target: target))
    }
}
