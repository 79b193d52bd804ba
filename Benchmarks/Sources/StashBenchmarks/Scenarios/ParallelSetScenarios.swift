import Foundation
import Stash

/// Sets from two threads at once (issue #32: "writes are ordered, but contention must not collapse
/// them"): one `Storage<Data>` as apps have it (memory layer on, 200-byte values, disk), and the same
/// through `DiskStorage<Data>` alone for reference. One sample: each of `threads` threads sets its
/// own share of the keys (thread `n` every key `i` with `i % threads == n`, in a shuffled order), all
/// started together; the wall time ÷ every set made. Every key is written before the clock starts,
/// so each sample overwrites the same keys (its revision alternates) and does the same work.
enum ParallelSetScenarios {
    static let label = "sets from 2 threads, 200 B data"
    /// Throughput at least 0.9 times one thread's: time per set at most 1 ÷ 0.9 of it.
    static let scaling = 1 / 0.9

    static func run(bench: Bench) throws {
        let settings = bench.settings
        let rows = ["\(label) vs 1 thread (Stash)", "\(label) vs 1 thread (DiskStorage)"]
        guard rows.contains(where: { settings.wants($0) }) else { return }
        let fixture = EngineFixture(count: settings.keyCount)
        let root = try bench.freshDirectory("parallel-sets")
        let storage = try Storage<Data>(diskConfig: DiskConfig(name: "storage", directory: root), memoryConfig: MemoryConfig(),
                                        transformer: TransformerFactory.forData())
        let disk = try DiskStorage<Data>(config: DiskConfig(name: "disk", directory: root), transformer: TransformerFactory.forData())
        print("== Storage<Data> and DiskStorage<Data>, 200 B data: sets from 1 and 2 threads, \(fixture.count) keys")
        let order = fixture.order(seed: 30).map(Int.init)
        let shares = (0..<2).map { thread in order.filter { $0 % 2 == thread } }
        let sides = [
            Setter { index, revision in try storage.setObject(fixture.valueData[revision][index % fixture.valueCount], forKey: fixture.keyStrings[index]) },
            Setter { index, revision in try disk.setObject(fixture.valueData[revision][index % fixture.valueCount], forKey: fixture.keyStrings[index]) },
        ]
        for side in sides { _ = try sets(side, [order], revision: 0) }
        let samples = try Measure.interleaved(rounds: settings.threadRounds, [
            { round in try sets(sides[0], [order], revision: (round + 1) % 2) },
            { round in try sets(sides[0], shares, revision: (round + 1) % 2) },
            { round in try sets(sides[1], [order], revision: (round + 1) % 2) },
            { round in try sets(sides[1], shares, revision: (round + 1) % 2) },
        ])
        bench.add(Row(rows[0], stash: samples[1], baseline: samples[0], vs: "Stash, 1 thread", target: .ratio(scaling)))
        bench.add(Row(rows[1], stash: samples[3], baseline: samples[2], vs: "DiskStorage, 1 thread"))
    }

    /// Every key of `shares[n]` set by thread `n`, all threads started together; ns per set overall.
    static func sets(_ side: Setter, _ shares: [[Int]], revision: Int) throws -> Double {
        try TogetherOnThreads.nanosecondsPerOperation(threads: shares.count, operations: shares.reduce(0) { $0 + $1.count },
                                                      what: "parallel sets") { thread in
            for index in shares[thread] { try side.set(index, revision) }
        }
    }

    /// A set of key `index` in `revision` on a store that any thread may write (both storages are).
    struct Setter: @unchecked Sendable {
        let set: (_ index: Int, _ revision: Int) throws -> Void
    }
}
