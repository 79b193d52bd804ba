import Foundation
import Stash

/// The rows of the "Other processes welcome" issue that one writing process runs (the two writing
/// processes are ``TwoWritersScenario``): what `DiskConfig(allowsWritersInOtherProcesses: true)` costs
/// a process alone — set new, overwrite and a warm read against the same engine without the setting,
/// and the writes against LevelDB — and what a reader in a second process (`readOnly: true`) pays
/// beside the writer: idle, against the writer's own reads; and while the writer writes, against the
/// same reads with no writer. The engine rows' keys and values (``EngineFixture``), every key, in
/// random order, in interleaved batches.
enum MultiProcessScenarios {
    static let allowed = "writers in other processes allowed"
    static let setNew = "set new key, 200 B data, \(allowed)"
    static let overwrite = "overwrite, 200 B data, \(allowed)"
    static let warmRead = "disk hit, warm, 200 B data, \(allowed)"
    static let without = "without"
    static let readerBeside = "disk hit, warm, 200 B data, in a reader process beside a writer"
    static let singleProcess = "single-process read"
    static let readsWhileWriting = "reads in a second process while the first writes, 200 B data"
    static let noWriter = "no writer"

    /// Stash with the setting, Stash without, LevelDB: the lineup's sides in this order.
    static var contenders: [EngineContender] { [
        EngineContender(name: "Allowed") { try StashEngineSide(in: $0, $1, allowsWritersInOtherProcesses: true) },
        EngineContender.stash, EngineContender.leveldb,
    ] }

    static func run(bench: Bench) throws {
        let settings = bench.settings
        let wantsSet = settings.wants(setNew, peers: [without, "LevelDB"])
        let wantsOverwrite = settings.wants(overwrite, peers: [without, "LevelDB"])
        let wantsWarm = settings.wants("\(warmRead) vs \(without)")
        let wantsBeside = settings.wants("\(readerBeside) vs \(singleProcess)")
        let wantsWhile = settings.wants("\(readsWhileWriting) vs \(noWriter)")
        guard wantsSet || wantsOverwrite || wantsWarm || wantsBeside || wantsWhile else { return }
        let fixture = EngineFixture(count: settings.keyCount)
        let lineup = try EngineLineup(contenders, fixture: fixture, root: try bench.freshDirectory("multi-process"))
        defer { lineup.close() }
        print("== engine, 200 B data: Stash with writers in other processes allowed vs without, vs LevelDB; "
            + "a reader process beside the writer; \(fixture.count) keys")
        let batch = settings.batch
        if wantsSet {
            let samples = try lineup.measure(.set(revision: 0), order: fixture.order(seed: 1), batch: batch)
            reportWrites(bench, setNew, samples)
        } else {
            try lineup.populate()
        }
        if wantsOverwrite {
            let samples = try lineup.measure(.set(revision: 1), order: fixture.order(seed: 2), batch: batch)
            reportWrites(bench, overwrite, samples)
        }
        if wantsWarm {
            let samples = try lineup.measure(.get, order: fixture.order(seed: 3), batch: batch, sides: Array(lineup.sides[0..<2]))
            bench.add(Row("\(warmRead) vs \(without)", stash: samples[0], baseline: samples[1], vs: "Stash, without the setting"))
        }
        if wantsBeside || wantsWhile {
            try readerRows(bench, lineup, beside: wantsBeside, whileWriting: wantsWhile)
        }
    }

    /// `<label> vs without` and `<label> vs LevelDB` (target ≤ 2.0×: a write with the setting against
    /// LevelDB's single-process write).
    private static func reportWrites(_ bench: Bench, _ label: String, _ samples: [[Double]]) {
        if bench.settings.wants("\(label) vs \(without)") {
            bench.add(Row("\(label) vs \(without)", stash: samples[0], baseline: samples[1], vs: "Stash, without the setting"))
        }
        if bench.settings.wants("\(label) vs LevelDB") {
            bench.add(Row("\(label) vs LevelDB", stash: samples[0], baseline: samples[2], vs: "LevelDB", target: .ratio(2.0)))
        }
    }

    /// A reader process (``StoreProcess``, `readOnly: true`) on the store of the lineup's Stash without
    /// the setting, which this process keeps open for writing (its lock held for its life).
    private static func readerRows(_ bench: Bench, _ lineup: EngineLineup, beside: Bool, whileWriting: Bool) throws {
        let fixture = lineup.fixture
        let seed: UInt64 = 4
        let folder = EngineContender.folder(EngineContender.stash.name, under: lineup.root)
        let reader = try ChildProcess(["--store-process", "reader", folder.path, String(fixture.count), String(seed)])
        defer { try? reader.finish() }
        try reader.expect("ready")
        let order = fixture.order(seed: seed)
        let starts = Array(stride(from: 0, to: order.count, by: bench.settings.batch))
        func range(_ round: Int) -> Range<Int> { starts[round]..<min(starts[round] + bench.settings.batch, order.count) }
        func remote(_ round: Int) throws -> Double {
            try reader.send("get \(range(round).lowerBound) \(range(round).upperBound)")
            let words = try reader.expect("ns")
            guard let ns = words.first.flatMap({ Double($0) }) else { throw BenchError("reader process: no figure") }
            return ns
        }
        let writer = lineup.sides[1]
        if beside {
            let samples = try order.withUnsafeBufferPointer { all in
                try Measure.interleaved(rounds: starts.count, [
                    { round in try remote(round) },
                    { round in try writer.batch(.get, UnsafeBufferPointer(rebasing: all[range(round)])) },
                ])
            }
            bench.add(Row("\(readerBeside) vs \(singleProcess)", stash: samples[0], baseline: samples[1],
                          vs: "the writer's own reads", target: .ratio(1.1)))
        }
        if whileWriting {
            guard let stash = writer as? StashEngineSide else { throw BenchError("the lineup's second side is not Stash") }
            var (writes, writing) = (0, Duration.zero)
            let samples = try Measure.interleaved(rounds: starts.count, [
                { round in
                    let started = ContinuousClock.now
                    let background = BackgroundWriter(stash.storage, keys: fixture.keyStrings, values: fixture.valueData,
                                                      seed: UInt64(round))
                    background.waitUntilWriting()
                    let ns = try remote(round)
                    writes += try background.stop()
                    writing += ContinuousClock.now - started
                    return ns
                },
                { round in try remote(round) },
            ])
            bench.add(Row("\(readsWhileWriting) vs \(noWriter)", stash: samples[0], baseline: samples[1], vs: "the same reads, no writer"))
            print(String(format: "    (the writer: %.0f overwrites/s while the reader read)", Double(writes) / (writing.nanoseconds / 1e9)))
        }
    }
}

/// Overwrites random keys of `storage` on a thread of its own until stopped: the writing process of
/// the row "reads in a second process while the first writes".
final class BackgroundWriter: Sendable {
    private let state = Shared((stop: false, writes: 0, failure: String?.none))
    private let started = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(_ storage: DiskStorage<Data>, keys: [String], values: [[Data]], seed: UInt64) {
        Thread.detachNewThread { [state, started, done] in
            var generator = SplitMix64(seed: seed)
            var writes = 0
            do {
                repeat {
                    let key = Int(generator.next() % UInt64(keys.count))
                    let revision = values[writes % values.count]
                    try storage.setObject(revision[key % revision.count], forKey: keys[key])
                    writes += 1
                    if writes == 1 { started.signal() }
                } while !state.get().stop
            } catch {
                state.update { $0.failure = "\(error)" }
                if writes == 0 { started.signal() }
            }
            state.update { [writes] in $0.writes = writes }
            done.signal()
        }
    }

    /// Returns once the first write is done (the thread is writing).
    func waitUntilWriting() { started.wait() }

    /// Stops the writing and returns how many writes it made.
    func stop() throws -> Int {
        state.update { $0.stop = true }
        done.wait()
        let result = state.get()
        if let failure = result.failure { throw BenchError("background writer: \(failure)") }
        return result.writes
    }
}
