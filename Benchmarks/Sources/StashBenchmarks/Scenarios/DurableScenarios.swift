import Foundation
import Stash

/// Writes that reach stable storage before they return, on 1 and on 4 threads: Stash's
/// `DiskConfig(durable: true)` against SQLite `synchronous=FULL` and LevelDB `sync=true`, with
/// 200-byte `Data` values on every side. On 4 threads an engine that shares one fsync between
/// concurrent writers (group commit) gets more writes through per second.
enum DurableScenarios {
    static let sqlite = "SQLite synchronous=FULL"
    static let leveldb = "LevelDB sync=true"

    static func run(bench: Bench, label: String, threads: Int) throws {
        let kind = Kind<Data>.small
        let lineup = try Lineup(kind, in: try bench.freshDirectory("durable-\(threads)"), keyCount: 0, [
            ("Stash", { try StashDiskSide(in: $0, durable: true) }),
            (sqlite, { try SQLiteSide(Codec<Data>.identity, in: $0, durable: true, dictionary: false) }),
            (leveldb, { try LevelDBSide(in: $0, durable: true) }),
        ])
        defer { lineup.close() }
        let perThread = bench.settings.durableWrites / threads
        let rounds = bench.settings.durableRounds
        // New keys every round and thread, built before the clock starts.
        let keys = (0..<rounds).map { round in
            (0..<threads).map { thread in (0..<perThread).map { "durable.\(round).\(thread).\($0)" } }
        }
        let value = kind.value(0, 0)
        let samples = try Measure.interleaved(rounds: rounds, lineup.sides.map { side in
            { round in
                let failure = Shared(String?.none)
                let ns = Measure.nsPerOp(threads * perThread) {
                    DispatchQueue.concurrentPerform(iterations: threads) { thread in
                        do {
                            for key in keys[round][thread] { try side.set(value, forKey: key) }
                        } catch {
                            failure.set("\(error)")
                        }
                    }
                }
                if let message = failure.get() { throw BenchError("\(label): \(message)") }
                return ns
            }
        })
        PeerScenarios.report(lineup, bench: bench, label: label, samples: samples, targets: [.ratio(1.0), .ratio(1.0)])
    }
}
