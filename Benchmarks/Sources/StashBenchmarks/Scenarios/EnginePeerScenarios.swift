import Foundation

/// The engine rows, engine to engine: Stash's `DiskStorage<Data>` against LevelDB (default options),
/// LMDB and SQLite reached from Swift with the least wrapper, 19-byte keys and 200-byte values
/// prepared before the clock starts. Set new, overwrite, get cold (with a LevelDB
/// `verify_checksums=true` row beside the default one), remove; every key, in random order.
enum EnginePeerScenarios {
    static let setNew = "set new key, 200 B data"
    static let overwrite = "overwrite, 200 B data"
    static let cold = "disk hit, cold, 200 B data"
    static let remove = "removeObject, 200 B data"
    static let verifying = "LevelDB verify_checksums"
    static let peers = EngineContender.peers.map(\.name)

    static func run(bench: Bench) throws {
        let settings = bench.settings
        let wanted = [setNew, overwrite, cold, remove].map { settings.wants($0, peers: peers + [verifying]) }
        guard wanted.contains(true) else { return }
        let fixture = EngineFixture(count: settings.keyCount)
        let lineup = try EngineLineup([.stash] + EngineContender.peers, fixture: fixture,
                                      root: try bench.freshDirectory("engine-peers"))
        defer { lineup.close() }
        print("== engine, 200 B data: Stash vs \(peers.joined(separator: ", ")), \(fixture.count) keys")
        let batch = settings.batch
        if wanted[0] {
            let samples = try lineup.measure(.set(revision: 0), order: fixture.order(seed: 1), batch: batch)
            report(bench, setNew, lineup.names, samples, targets: [.ratio(1.0)])
        } else {
            try lineup.populate()
        }
        if wanted[1] {
            let samples = try lineup.measure(.set(revision: 1), order: fixture.order(seed: 2), batch: batch)
            report(bench, overwrite, lineup.names, samples, targets: [.ratio(1.0)])
        }
        if wanted[2] {
            var samples = Array(repeating: [Double](), count: lineup.names.count + 1)
            for pass in 0..<settings.coldPasses {
                try lineup.reopen()
                let leveldb = try cast(lineup.sides[1])
                let sides = lineup.sides + [LevelDBEngineSide(verifying: leveldb)]
                let passSamples = try lineup.measure(.get, order: fixture.order(seed: 10 + UInt64(pass)), batch: batch, sides: sides)
                for side in samples.indices { samples[side] += passSamples[side] }
            }
            report(bench, cold, lineup.names + [verifying], samples, targets: [.ratio(1.0), .ratio(2.0)])
        }
        if wanted[3] {
            let samples = try lineup.measure(.remove, order: fixture.order(seed: 5), batch: batch)
            report(bench, remove, lineup.names, samples, targets: [.ratio(1.0)])
        }
    }

    private static func cast(_ side: any EngineSide) throws -> LevelDBEngineSide {
        guard let leveldb = side as? LevelDBEngineSide else { throw BenchError("the lineup's second side is not LevelDB") }
        return leveldb
    }

    /// One row per peer, `<label> vs <peer>`; `targets` in peer order (missing: none).
    static func report(_ bench: Bench, _ label: String, _ names: [String], _ samples: [[Double]], targets: [Target]) {
        for peer in 1..<names.count where bench.settings.wants("\(label) vs \(names[peer])") {
            bench.add(Row("\(label) vs \(names[peer])", stash: samples[0], baseline: samples[peer], vs: names[peer],
                          target: peer - 1 < targets.count ? targets[peer - 1] : .none))
        }
    }
}
