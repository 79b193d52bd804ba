import Foundation
import Stash

/// The engine at many entries (200-byte `Data` values, 19-byte keys), Stash's `DiskStorage<Data>`
/// against LevelDB, LMDB and SQLite: filling with one write per entry, closing after the fill, disk
/// allocated per entry, open + first get right after the fill and after a process read every key
/// (access records present), what opening and reading cost a process in memory, prefix listing
/// (``PrefixScenarios``), the longest overwrite while every key is overwritten twice, and — at the largest
/// count — trimming to half and removeAll.
enum EngineScaleScenarios {
    static let peers = EngineContender.peers.map(\.name)

    /// The rows' labels at `count` entries (each row adds `vs <peer>`, except the bulk ones' `vs SQLite`).
    struct Labels {
        var fill, close, disk, open, openAccessed, heap, rssOfOpen, rss, anonymous, closeAfterReading: String
        var bulk: [String]

        init(_ count: Int) {
            fill = "fill \(count) entries, one write each"
            close = "close after filling \(count) entries"
            disk = "disk allocated per 200 B entry, \(count) entries"
            open = "open + first read, 200 B data, \(count) entries"
            openAccessed = "open + first get, \(count) entries, access records present"
            heap = "heap growth per entry after opening, \(count) entries"
            rssOfOpen = "RSS growth per entry of open + first get, \(count) entries"
            rss = "RSS growth per entry after reading every key once, \(count) entries"
            anonymous = "anonymous RSS growth per entry after reading every key once, \(count) entries"
            closeAfterReading = "close of a process that read every key, \(count) entries"
            bulk = ["trim to half, \(count) entries", "removeAll, \(count) entries"]
        }

        var perPeer: [String] { [fill, close, disk, open, openAccessed, heap, rssOfOpen, rss, anonymous, closeAfterReading] }
    }

    static func run(bench: Bench) throws {
        let counts = bench.settings.engineCounts
        var openTimes: [(count: Int, ns: Double)] = []
        for count in counts {
            let labels = Labels(count)
            let largest = count == counts.last
            let wants = { (label: String) in bench.settings.wants(label, peers: peers) }
            let wantsBulk = largest && labels.bulk.contains { bench.settings.wants($0, peers: ["SQLite"]) }
            let wantsPrefix = PrefixScenarios.wanted(bench, count)
            let wantsStalls = bench.settings.wants("\(longestOverwriteLabel(count)) vs LevelDB")
            guard labels.perPeer.contains(where: wants) || wantsBulk || wantsPrefix || wantsStalls else { continue }
            print("== engine, \(count) entries of 200 B")
            let folders = Folders(try bench.freshDirectory("engine-\(count)"))
            defer { try? FileManager.default.removeItem(at: folders.root) }
            let fixture = EngineFixture(count: count)
            try fillAndClose(bench: bench, labels: labels, fixture: fixture, folders: folders, largest: largest)

            if wants(labels.disk) {
                let stash = try RawFile.allocated(under: folders.stash.path)
                for (index, peer) in peers.enumerated() {
                    let bytes = try RawFile.allocated(under: folders.peer(peer).path)
                    bench.add(Row("\(labels.disk) vs \(peer)", stash: Double(stash) / Double(count),
                                  baseline: Double(bytes) / Double(count), vs: peer, unit: .bytes,
                                  target: index == 0 && count >= 100_000 ? .absolute(240) : .none))
                }
            }
            if wants(labels.open) {
                // Issue #32: a store of 10,000 entries (most app stores, opened at every launch) in ≤ 1 ms.
                let target: Target = count == 10_000 ? .absolute(1e6) : .none
                let samples = try measureOpen(bench: bench, label: labels.open, folders: folders, fixture: fixture, target: target)
                openTimes.append((count, samples))
            }
            if [labels.openAccessed, labels.heap, labels.rssOfOpen, labels.rss, labels.anonymous, labels.closeAfterReading].contains(where: wants) {
                try afterReading(bench: bench, labels: labels, fixture: fixture, folders: folders, largest: largest)
            }
            if wantsPrefix {
                try PrefixScenarios.run(bench: bench, count: count, folders: folders)
            }
            // After every row that reads the filled store as it was: this one rewrites every value.
            try longestOverwrite(bench: bench, fixture: fixture, folders: folders)
            if wantsBulk {
                try bulkRemoval(bench: bench, count: count, folders: folders)
            }
        }
        // Linear or better: the time at the larger count at most the smaller count's time scaled up.
        for (smaller, larger) in zip(openTimes, openTimes.dropFirst()) where larger.count >= 100_000 {
            let factor = Double(larger.count) / Double(smaller.count)
            bench.add(Row("open + first read growth, \(smaller.count) → \(larger.count) entries vs linear",
                          stash: larger.ns, baseline: smaller.ns * factor, vs: String(format: "%.0f × Stash at %d", factor, smaller.count),
                          unit: .ns, target: .ratio(1.0)))
        }
    }

    /// Where each engine's files live, under one folder (the same folders ``EngineContender`` opens).
    struct Folders {
        var root: URL
        init(_ root: URL) { self.root = root }
        var stash: URL { peer("Stash") }
        func peer(_ name: String) -> URL { EngineContender.folder(name, under: root) }

        func openStash() throws -> DiskStorage<Data> { try StashDiskSide(in: stash).storage }
    }

    /// Every engine filled with every key, one write per entry in key order (each engine's normal
    /// path: LMDB and SQLite one transaction per write), then closed; both timed, one engine after
    /// the other. Rows `fill N entries, one write each vs <peer>` and `close after filling …`.
    private static func fillAndClose(bench: Bench, labels: Labels, fixture: EngineFixture, folders: Folders,
                                     largest: Bool) throws {
        let order = fixture.sequential
        var fills: [Double] = [], closes: [Double] = []
        for contender in [EngineContender.stash] + EngineContender.peers {
            var side: (any EngineSide)? = try contender.open(folders.peer(contender.name), fixture)
            let perEntry = try order.withUnsafeBufferPointer { try side!.batch(.set(revision: 0), $0) }
            fills.append(perEntry * Double(fixture.count))
            closes.append(Measure.nsPerOp(1) { side = nil })
        }
        print(String(format: "  (filled: Stash %.2f s, %@)", fills[0] / 1e9,
                     zip(peers, fills.dropFirst()).map { String(format: "%@ %.2f s", $0, $1 / 1e9) }.joined(separator: ", ")))
        let large = fixture.count >= 100_000
        for (index, peer) in peers.enumerated() {
            if bench.settings.wants("\(labels.fill) vs \(peer)") {
                bench.add(Row("\(labels.fill) vs \(peer)", stash: fills[0], baseline: fills[index + 1], vs: peer, unit: .ns,
                              target: index == 0 && largest ? .ratio(1.0) : .none))
            }
            if bench.settings.wants("\(labels.close) vs \(peer)") {
                bench.add(Row("\(labels.close) vs \(peer)", stash: closes[0], baseline: closes[index + 1], vs: peer, unit: .ns,
                              target: index == 0 && largest && large ? .absolute(20e6) : .none))
            }
        }
    }

    /// Open and get one key, timed together, interleaved over every engine; each released after the
    /// clock stops. Rows `<label> vs <peer>`, `target` on the LevelDB row; returns Stash's median.
    static func measureOpen(bench: Bench, label: String, folders: Folders, fixture: EngineFixture,
                                    target: Target) throws -> Double {
        let key = fixture.count / 2
        let contenders = [EngineContender.stash] + EngineContender.peers
        // One open of each first: one-time costs (first page-in, Foundation) stay out of the samples.
        for contender in contenders { _ = try contender.open(folders.peer(contender.name), fixture).get(key) }
        let samples = try Measure.interleaved(rounds: bench.settings.openRounds, contenders.map { contender in
            { _ in
                var side: (any EngineSide)?
                defer { side = nil }
                return try Measure.nsPerOp(1) {
                    side = try contender.open(folders.peer(contender.name), fixture)
                    consume(try side!.get(key))
                }
            }
        })
        for (index, peer) in peers.enumerated() where bench.settings.wants("\(label) vs \(peer)") {
            bench.add(Row("\(label) vs \(peer)", stash: samples[0], baseline: samples[index + 1], vs: peer, unit: .ns,
                          target: index == 0 ? target : .none))
        }
        return samples[0].median
    }
}
