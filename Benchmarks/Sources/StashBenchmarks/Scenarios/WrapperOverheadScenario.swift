import CPeerDriver
import Foundation

/// What the Swift peers cost over their engines: each peer driven three ways on the same keys and
/// values — by the C driver (the whole loop in C), by the least-wrapper Swift side of the engine rows,
/// and by its `Side` (`String` keys, `Data` values: the app and durable rows) — interleaved, for set
/// new, overwrite, get cold and remove. Reported once, as its own table (no Stash in it).
enum WrapperOverheadScenario {
    static let label = "wrapper overhead"

    static func run(bench: Bench) throws {
        guard bench.settings.wants(label) else { return }
        let fixture = EngineFixture(count: bench.settings.keyCount)
        let peers: [(String, cpeer_engine, (URL) throws -> any Side<Data>)] = [
            ("LevelDB", CPEER_LEVELDB, { try LevelDBSide(in: $0) }),
            ("LMDB", CPEER_LMDB, { try LMDBSide(in: $0) }),
            ("SQLite", CPEER_SQLITE, { try SQLiteSide(Codec<Data>.identity, in: $0, dictionary: false) }),
        ]
        print("== wrapper overhead: \(peers.map(\.0).joined(separator: ", ")) from C and from Swift, \(fixture.count) keys")
        for (peer, engine, side) in peers {
            let contenders = [
                EngineContender(name: "C driver") { try CDriverSide(engine, in: $0, $1) },
                EngineContender(name: "Swift", open: EngineContender.peers.first { $0.name == peer }!.open),
                EngineContender(name: "Side") { WrappedSide(try side($0), $1) },
            ]
            let lineup = try EngineLineup(contenders, fixture: fixture, root: try bench.freshDirectory("wrappers-\(peer)"))
            defer { lineup.close() }
            let batch = bench.settings.batch
            func add(_ operation: String, _ samples: [[Double]]) {
                bench.addWrapper(WrapperRow(peer: peer, operation: operation, c: samples[0].median,
                                            swift: samples[1].median, side: samples[2].median))
            }
            add("set new", try lineup.measure(.set(revision: 0), order: fixture.order(seed: 1), batch: batch))
            add("overwrite", try lineup.measure(.set(revision: 1), order: fixture.order(seed: 2), batch: batch))
            var reads = Array(repeating: [Double](), count: contenders.count)
            for pass in 0..<bench.settings.coldPasses {
                try lineup.reopen()
                let samples = try lineup.measure(.get, order: fixture.order(seed: 10 + UInt64(pass)), batch: batch)
                for side in reads.indices { reads[side] += samples[side] }
            }
            add("get cold", reads)
            add("remove", try lineup.measure(.remove, order: fixture.order(seed: 5), batch: batch))
        }
    }
}

/// One line of the wrapper-overhead table: a peer's operation from C, from the engine rows' Swift
/// side, and through its `Side`, in ns/op.
struct WrapperRow {
    var peer: String
    var operation: String
    var c: Double
    var swift: Double
    var side: Double
    /// The file system tag of the run (`[ext4]`, `[tmpfs]`).
    var fileSystem = ""
}
