import Foundation
import Stash

extension EngineScaleScenarios {
    /// A process of its own reads every key of each engine once and closes (``ReadAllProcess``);
    /// then open + first get is timed, with the access records that process left. Then a second
    /// such process reports what opening (malloc's bytes in use) and reading every key (the resident
    /// set) cost it. Rows `open + first get, N entries, access records present …`, `heap growth per
    /// entry after opening …`, `RSS growth per entry after reading every key once …`.
    static func afterReading(bench: Bench, labels: Labels, fixture: EngineFixture, folders: Folders,
                             largest: Bool) throws {
        let count = fixture.count
        let engines = ["Stash"] + peers
        for engine in engines { _ = try ReadAllProcess.run(engine, folder: folders.peer(engine), count: count) }
        if bench.settings.wants(labels.openAccessed, peers: peers) {
            let limit: Target = count >= 1_000_000 ? .absolute(20e6) : count >= 100_000 ? .absolute(5e6) : .none
            _ = try measureOpen(bench: bench, label: labels.openAccessed, folders: folders, fixture: fixture, target: limit)
        }
        guard bench.settings.wants(labels.heap, peers: peers) || bench.settings.wants(labels.rss, peers: peers) else { return }
        let figures = try engines.map { try ReadAllProcess.run($0, folder: folders.peer($0), count: count) }
        for (index, peer) in peers.enumerated() {
            let (stash, other) = (figures[0], figures[index + 1])
            if bench.settings.wants("\(labels.heap) vs \(peer)") {
                bench.add(Row("\(labels.heap) vs \(peer)", stash: Double(stash.heapGrowth) / Double(count),
                              baseline: Double(other.heapGrowth) / Double(count), vs: peer, unit: .bytes,
                              target: index == 0 && largest ? .absolute(16) : .none))
            }
            if bench.settings.wants("\(labels.rss) vs \(peer)") {
                bench.add(Row("\(labels.rss) vs \(peer)", stash: Double(stash.rssGrowth) / Double(count),
                              baseline: Double(other.rssGrowth) / Double(count), vs: peer, unit: .bytes,
                              target: index == 0 && largest ? .absolute(100) : .none))
            }
        }
    }

    /// Trimming to half the size, then removeAll, each one call timed whole, against SQLite deleting
    /// its oldest half and then every row. The targets hold at a million entries.
    static func bulkRemoval(bench: Bench, count: Int, folders: Folders) throws {
        let stash = try folders.openStash()
        let sqlite = try SQLiteSide(Codec<Data>.identity, in: folders.peer("SQLite"), dictionary: false)
        let half = stash.totalSize / 2
        let trimStash = try Measure.nsPerOp(1) { try stash.trim(toSize: half) }
        let trimSQLite = try Measure.nsPerOp(1) {
            try sqlite.store.execute("DELETE FROM kv WHERE rowid IN (SELECT rowid FROM kv ORDER BY rowid LIMIT \(count / 2))")
        }
        let clearStash = try Measure.nsPerOp(1) { try stash.removeAll() }
        let clearSQLite = try Measure.nsPerOp(1) { try sqlite.store.execute("DELETE FROM kv") }
        let atScale = count >= 1_000_000
        bench.add(Row("trim to half, \(count) entries vs SQLite", stash: trimStash, baseline: trimSQLite, vs: "SQLite",
                      unit: .ns, target: atScale ? .absolute(5e9) : .none))
        bench.add(Row("removeAll, \(count) entries vs SQLite", stash: clearStash, baseline: clearSQLite, vs: "SQLite",
                      unit: .ns, target: atScale ? .absolute(50e6) : .none))
    }
}
