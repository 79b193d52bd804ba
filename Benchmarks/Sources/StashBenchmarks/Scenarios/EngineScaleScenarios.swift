import Foundation
import MallocStats
import Stash

/// The engine at many entries (200-byte `Data` values, 19-byte keys): disk allocated per entry,
/// opening and the first read, index memory, prefix listing (``PrefixScenarios``), and — at the
/// largest count — trimming to half and removeAll; Stash's `DiskStorage<Data>` against LevelDB, LMDB and SQLite.
enum EngineScaleScenarios {
    static let peers = ["LevelDB", "LMDB", "SQLite"]

    static func run(bench: Bench) throws {
        let counts = bench.settings.engineCounts
        var openTimes: [(count: Int, ns: Double)] = []
        for count in counts {
            let diskLabel = "disk allocated per 200 B entry, \(count) entries"
            let openLabel = "open + first read, 200 B data, \(count) entries"
            let memoryLabel = "index memory per entry, 200 B data, \(count) entries"
            let bulkLabels = ["trim to half, \(count) entries", "removeAll, \(count) entries"]
            let largest = count == counts.last
            let wantsDisk = bench.settings.wants(diskLabel, peers: peers)
            let wantsOpen = bench.settings.wants(openLabel, peers: peers)
            let wantsMemory = largest && bench.settings.wants(memoryLabel)
            let wantsBulk = largest && bulkLabels.contains { bench.settings.wants($0, peers: ["SQLite"]) }
            let wantsPrefix = PrefixScenarios.wanted(bench, count)
            let wanted = wantsDisk || wantsOpen || wantsMemory || wantsBulk || wantsPrefix
            guard wanted else { continue }
            print("== engine, \(count) entries of 200 B")
            let directory = try bench.freshDirectory("engine-\(count)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let folders = Folders(directory)
            try fill(count, folders)

            if wantsDisk {
                let stash = try RawFile.allocated(under: folders.stash.path)
                for (index, peer) in peers.enumerated() {
                    let bytes = try RawFile.allocated(under: folders.peer(peer).path)
                    bench.add(Row("\(diskLabel) vs \(peer)", stash: Double(stash) / Double(count),
                                  baseline: Double(bytes) / Double(count), vs: peer, unit: .bytes,
                                  target: index == 0 ? .absolute(250) : .none))
                }
            }
            let key = Fixtures.key(count / 2)
            if wantsOpen {
                let stash = try measureOpen(bench: bench, label: openLabel, folders: folders, key: key, count: count)
                openTimes.append((count, stash))
            }
            if wantsMemory {
                try indexMemory(bench: bench, label: memoryLabel, folders: folders, count: count)
            }
            if wantsPrefix {
                try PrefixScenarios.run(bench: bench, count: count, folders: folders)
            }
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

    /// Where each engine's files live, under one folder.
    struct Folders {
        var root: URL
        init(_ root: URL) { self.root = root }
        var stash: URL { root.appendingPathComponent("Stash") }
        func peer(_ name: String) -> URL { root.appendingPathComponent(name) }

        func openStash() throws -> DiskStorage<Data> { try StashDiskSide(in: stash).storage }
        func open(_ peer: String) throws -> any Side<Data> {
            switch peer {
            case "LevelDB": return try LevelDBSide(in: self.peer(peer))
            case "LMDB": return try LMDBSide(in: self.peer(peer))
            default: return try SQLiteSide(Codec<Data>.identity, in: self.peer(peer), dictionary: false)
            }
        }
    }

    /// `count` entries in every engine, then every engine closed. Stash and LevelDB get one write
    /// per entry (their normal path); LMDB and SQLite one transaction per 10,000 (untimed; faster).
    private static func fill(_ count: Int, _ folders: Folders) throws {
        let value = { (index: Int) in Fixtures.small(index, revision: 0) }
        let started = ContinuousClock.now
        do {
            let stash = try folders.openStash()
            for index in 0..<count { try stash.setObject(value(index), forKey: Fixtures.key(index)) }
        }
        let stashSeconds = (ContinuousClock.now - started).nanoseconds / 1e9
        do {
            let leveldb = try LevelDBSide(in: folders.peer("LevelDB"))
            for index in 0..<count { try leveldb.set(value(index), forKey: Fixtures.key(index)) }
        }
        try LMDBSide(in: folders.peer("LMDB")).store.fill(count, key: Fixtures.key, value: value)
        do {
            let sqlite = try SQLiteSide(Codec<Data>.identity, in: folders.peer("SQLite"), dictionary: false)
            for start in stride(from: 0, to: count, by: 10_000) {
                try sqlite.store.execute("BEGIN")
                for index in start..<min(start + 10_000, count) { try sqlite.set(value(index), forKey: Fixtures.key(index)) }
                try sqlite.store.execute("COMMIT")
            }
        }
        print(String(format: "  (filled; Stash took %.1f s for %d writes)", stashSeconds, count))
    }

    /// Open and read one key, timed together, interleaved over every engine; released after the clock stops.
    private static func measureOpen(bench: Bench, label: String, folders: Folders, key: String, count: Int) throws -> Double {
        // One open of each first: one-time costs (first page-in, Foundation) stay out of the samples.
        _ = try folders.openStash().object(forKey: key)
        for peer in peers { _ = try folders.open(peer).get(key) }
        let sides: [(Int) throws -> Double] = [{ _ in
            var storage: DiskStorage<Data>?
            defer { storage = nil }
            return try Measure.nsPerOp(1) {
                storage = try folders.openStash()
                consume(try storage!.object(forKey: key).count)
            }
        }] + peers.map { peer in
            { _ in
                var side: (any Side<Data>)?
                defer { side = nil }
                return try Measure.nsPerOp(1) {
                    side = try folders.open(peer)
                    consume(try side!.get(key).count)
                }
            }
        }
        let samples = try Measure.interleaved(rounds: bench.settings.openRounds, sides)
        let limit: Double? = count >= 1_000_000 ? 150e6 : count >= 100_000 ? 15e6 : nil
        for (index, peer) in peers.enumerated() {
            let target: Target = index == 1 ? limit.map(Target.absolute) ?? .none : .none
            bench.add(Row("\(label) vs \(peer)", stash: samples[0], baseline: samples[index + 1], vs: peer, unit: .ns,
                          target: target))
        }
        return samples[0].median
    }

    /// What opening the store keeps allocated (mallinfo), per entry, against the keys as Swift strings.
    private static func indexMemory(bench: Bench, label: String, folders: Folders, count: Int) throws {
        let before = stash_bench_malloc_in_use()
        let storage = try folders.openStash()
        let after = stash_bench_malloc_in_use()
        withExtendedLifetime(storage) {}
        let keysBefore = stash_bench_malloc_in_use()
        let keys = (0..<count).map(Fixtures.key)
        let keysAfter = stash_bench_malloc_in_use()
        withExtendedLifetime(keys) {}
        bench.add(Row(label, stash: Double(after - before) / Double(count),
                      baseline: Double(keysAfter - keysBefore) / Double(count), vs: "the keys as [String]",
                      unit: .bytes, target: .absolute(80)))
    }

    /// Trimming to half the size, then removeAll, each one call timed whole, against SQLite deleting
    /// its oldest half and then every row. The targets hold at a million entries.
    private static func bulkRemoval(bench: Bench, count: Int, folders: Folders) throws {
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
