import Foundation
import Stash

/// Memory hits from two threads at once (issue #32, "memory hits from 2 threads vs 1 thread through
/// `Storage`"): a `Storage<Data>` whose memory layer holds every key (200-byte values, no limits),
/// read by 1 and by 2 threads. One sample: each of `threads` threads reads every key once, in an order
/// of its own, all started together (as ``ParallelGetScenarios``); the wall time ÷ every read made.
enum ParallelMemoryHitScenario {
    static let label = "memory hits from 2 threads, 200 B data vs 1 thread (Stash)"
    /// Throughput at least 1.5 times one thread's: time per hit at most 1 ÷ 1.5 of it.
    static let scaling = 1 / 1.5
    /// More rounds than the disk rows: a sample is a few milliseconds, so one descheduling weighs more.
    static let rounds = 25

    static func run(bench: Bench) throws {
        guard bench.settings.wants(label) else { return }
        let fixture = EngineFixture(count: bench.settings.keyCount)
        let directory = try bench.freshDirectory("parallel-memory-hits")
        defer { try? FileManager.default.removeItem(at: directory) }
        print("== Storage<Data>, 200 B data: memory hits from 1 and 2 threads, \(fixture.count) keys")
        let storage = try Storage<Data>(diskConfig: DiskConfig(name: "stash", directory: directory),
                                        memoryConfig: MemoryConfig(), transformer: TransformerFactory.forData())
        for index in 0..<fixture.count {
            try storage.setObject(fixture.valueData[0][index % fixture.valueCount], forKey: fixture.keyStrings[index])
        }
        let side = Reader(storage: storage, keys: fixture.keyStrings)
        let orders = (0..<2).map { fixture.order(seed: 40 + UInt64($0)) }
        _ = try reads(side, orders, threads: 1) // every key in memory, whatever the write path kept there
        let samples = try Measure.interleaved(rounds: bench.settings.quick ? 4 : rounds, [
            { _ in try reads(side, orders, threads: 1) },
            { _ in try reads(side, orders, threads: 2) },
        ])
        bench.add(Row(label, stash: samples[1], baseline: samples[0], vs: "Stash, 1 thread", target: .ratio(scaling)))
    }

    /// Every key read once by each of `threads` threads (thread `n` in `orders[n]`); ns per read overall.
    static func reads(_ reader: Reader, _ orders: [[Int32]], threads: Int) throws -> Double {
        try TogetherOnThreads.nanosecondsPerOperation(threads: threads, operations: threads * orders[0].count,
                                                      what: "parallel memory hits") { thread in
            var total = 0
            for index in orders[thread] { total &+= try reader.storage.object(forKey: reader.keys[Int(index)]).count }
            consume(total)
        }
    }

    /// The storage and its keys, shared by the reading threads (`Storage` is `Sendable`).
    struct Reader: Sendable {
        let storage: Storage<Data>
        let keys: [String]
    }
}
