import Foundation
import Stash

/// Stash against the peers a user would pick instead (SQLite, LevelDB, LMDB), on one ``Lineup``:
/// every side runs the same operations on the same keys, in interleaved batches, and each peer
/// gets a row `<label> vs <peer>` with the ratio Stash ÷ peer.
enum PeerScenarios {
    /// A step's targets, one per peer in lineup order (missing entries: no target).
    typealias Targets = [Target]

    /// Every key written once into empty stores, in random order.
    static func setNew<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        try writes(lineup, bench: bench, label: label, seed: 1, revision: 0, targets: targets)
    }

    /// Every key again with a new value, in another random order.
    static func overwrite<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        try writes(lineup, bench: bench, label: label, seed: 2, revision: 1, targets: targets)
    }

    static func writes<T>(_ lineup: Lineup<T>, bench: Bench, label: String, seed: UInt64, revision: Int,
                          targets: Targets, batch: Int? = nil) throws {
        let keys = lineup.keys
        let values = keys.indices.map { lineup.kind.value($0, revision) } // built before the clock starts
        let chunks = Fixtures.shuffled(keys.count, seed: seed).chunked(batch ?? bench.settings.batch)
        let samples = try Measure.interleaved(rounds: chunks.count, lineup.sides.map { side in
            { round in
                try Measure.nsPerOp(chunks[round].count) {
                    for index in chunks[round] { try side.set(values[index], forKey: keys[index]) }
                }
            }
        })
        report(lineup, bench: bench, label: label, samples: samples, targets: targets)
    }

    /// Every key removed, in random order (it empties the stores: the last step of a lineup).
    static func remove<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        let keys = lineup.keys
        let chunks = Fixtures.shuffled(keys.count, seed: 5).chunked(bench.settings.batch)
        let samples = try Measure.interleaved(rounds: chunks.count, lineup.sides.map { side in
            { round in
                try Measure.nsPerOp(chunks[round].count) { for index in chunks[round] { try side.remove(keys[index]) } }
            }
        })
        report(lineup, bench: bench, label: label, samples: samples, targets: targets)
    }

    /// Fresh instances (cold memory: Stash's memory layer and SQLite's dictionary are empty; warm
    /// OS cache), then every key read once, in random order, `coldPasses` times.
    static func coldHit<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        var samples = Array(repeating: [Double](), count: lineup.names.count)
        for pass in 0..<bench.settings.coldPasses {
            try lineup.reopen()
            let chunks = Fixtures.shuffled(lineup.keys.count, seed: 10 + UInt64(pass)).chunked(bench.settings.batch)
            let passSamples = try reads(lineup, chunks: chunks)
            for side in samples.indices { samples[side] += passSamples[side] }
        }
        report(lineup, bench: bench, label: label, samples: samples, targets: targets)
    }

    /// Every key read in random order while it is in memory (Stash's memory layer, the dictionary
    /// in front of SQLite), `memoryRounds` times.
    static func memoryHit<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        let order = Fixtures.shuffled(lineup.keys.count, seed: 3)
        let samples = try reads(lineup, chunks: Array(repeating: order[...], count: bench.settings.memoryRounds))
        report(lineup, bench: bench, label: label, samples: samples, targets: targets,
               peerNames: { $0 == "SQLite" ? "SQLite + dictionary" : $0 })
    }

    /// existsObject with cold memory for every stored key; Stash's target is absolute (≤ 1 µs).
    static func exists<T>(_ lineup: Lineup<T>, bench: Bench, label: String, targets: Targets) throws {
        try lineup.reopen()
        let hits = Fixtures.shuffled(lineup.keys.count, seed: 4).map { lineup.keys[$0] }
        let samples = try Measure.interleaved(rounds: bench.settings.existsRounds, lineup.sides.map { side in
            { _ in
                var found = 0
                let ns = try Measure.nsPerOp(hits.count) { for key in hits where try side.exists(key) { found += 1 } }
                guard found == hits.count else { throw BenchError("\(label): found \(found) of \(hits.count)") }
                return ns
            }
        })
        report(lineup, bench: bench, label: label, samples: samples, targets: targets)
    }

    /// 80% reads and 20% overwrites of random keys for a fixed time on `threads` threads (wall time
    /// ÷ operations of all threads), as ``ConcurrencyScenarios/mixed(_:bench:label:)`` does.
    static func mixed<T>(_ lineup: Lineup<T>, bench: Bench, label: String, threads: Int, targets: Targets) throws {
        let keys = lineup.keys
        let values = keys.indices.map { lineup.kind.value($0, 2) }
        let weight = lineup.kind.weight
        let seconds = bench.settings.threadSeconds
        let samples = try Measure.interleaved(rounds: bench.settings.threadRounds, lineup.sides.map { side in
            let operations = ConcurrencyScenarios.Operations(read: { weight(try side.get(keys[$0])) },
                                                             write: { try side.set(values[$0], forKey: keys[$0]) })
            return { round in
                try ConcurrencyScenarios.run(operations, threads: threads, seconds: seconds, keyCount: keys.count,
                                             seed: UInt64(round))
            }
        })
        report(lineup, bench: bench, label: label, samples: samples, targets: targets)
    }

    /// Reads the keys of each chunk on every side, one chunk per round; returns each side's ns/op.
    private static func reads<T>(_ lineup: Lineup<T>, chunks: [ArraySlice<Int>]) throws -> [[Double]] {
        let (keys, weight) = (lineup.keys, lineup.kind.weight)
        return try Measure.interleaved(rounds: chunks.count, lineup.sides.map { side in
            { round in
                try Measure.nsPerOp(chunks[round].count) {
                    for index in chunks[round] { consume(weight(try side.get(keys[index]))) }
                }
            }
        })
    }

    /// One row per peer: `<label> vs <peer>`, Stash's median against the peer's.
    static func report<T>(_ lineup: Lineup<T>, bench: Bench, label: String, samples: [[Double]], targets: Targets,
                          unit: Row.Unit = .nsPerOp, peerNames: (String) -> String = { $0 }) {
        for peer in 1..<lineup.names.count {
            let name = peerNames(lineup.names[peer])
            let target = peer - 1 < targets.count ? targets[peer - 1] : .none
            bench.add(Row("\(label) vs \(name)", stash: samples[0], baseline: samples[peer], vs: name, unit: unit,
                          target: target))
        }
    }
}
