import Foundation

/// Gets from two threads at once (issue #32, "Reads in parallel"): Stash's `DiskStorage<Data>` and
/// LevelDB (default options, one `DB` shared by both threads, as its users share it), every key
/// written, engines reopened (cold memory). One sample: each of `threads` threads reads every key
/// once, in an order of its own, all started together; the wall time ÷ every read made.
enum ParallelGetScenarios {
    static let label = "gets from 2 threads, 200 B data"
    /// Throughput at least 1.7 times one thread's: time per read at most 1 ÷ 1.7 of it.
    static let scaling = 1 / 1.7

    static func run(bench: Bench) throws {
        let settings = bench.settings
        let rows = ["\(label) vs 1 thread (Stash)", "\(label) vs LevelDB's 2 threads", "\(label) vs 1 thread (LevelDB)"]
        guard rows.contains(where: { settings.wants($0) }) else { return }
        let fixture = EngineFixture(count: settings.keyCount)
        let lineup = try EngineLineup([.stash, .leveldb], fixture: fixture, root: try bench.freshDirectory("parallel-gets"))
        defer { lineup.close() }
        print("== engine, 200 B data: gets from 1 and 2 threads, Stash and LevelDB, \(fixture.count) keys")
        try lineup.populate()
        try lineup.reopen()
        let orders = (0..<2).map { fixture.order(seed: 20 + UInt64($0)) }
        let sides = lineup.sides.map(UncheckedSide.init)
        let samples = try Measure.interleaved(rounds: settings.threadRounds, [
            { _ in try reads(sides[0], orders, threads: 1) },
            { _ in try reads(sides[0], orders, threads: 2) },
            { _ in try reads(sides[1], orders, threads: 1) },
            { _ in try reads(sides[1], orders, threads: 2) },
        ])
        bench.add(Row(rows[0], stash: samples[1], baseline: samples[0], vs: "Stash, 1 thread", target: .ratio(scaling)))
        bench.add(Row(rows[1], stash: samples[1], baseline: samples[3], vs: "LevelDB, 2 threads", target: .ratio(1.0)))
        // LevelDB's own scaling, for reference (its 2 threads ÷ its 1 thread; "Stash" is LevelDB here).
        bench.add(Row(rows[2], stash: samples[3], baseline: samples[2], vs: "LevelDB, 1 thread"))
    }

    /// Every key read once by each of `threads` threads (thread `n` in `orders[n]`); ns per read overall.
    static func reads(_ side: UncheckedSide, _ orders: [[Int32]], threads: Int) throws -> Double {
        try TogetherOnThreads.nanosecondsPerOperation(threads: threads, operations: threads * orders[0].count,
                                                      what: "parallel gets") { thread in
            var total = 0
            for index in orders[thread] { total &+= try side.engine.get(Int(index)) }
            consume(total)
        }
    }

    /// An engine read from several threads: Stash's `DiskStorage` and LevelDB's `DB` are both safe to
    /// read from any thread, which the protocol does not say.
    struct UncheckedSide: @unchecked Sendable {
        let engine: any EngineSide
        init(_ engine: any EngineSide) { self.engine = engine }
    }
}
