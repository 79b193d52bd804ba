import Foundation
import Stash

/// Issue #34's read-modify-write rows: an increment of a small Codable value (`Payload.score += 1`,
/// ~200 B of JSON) through `Storage<Payload>` with its default coder, in 1,000 stored keys.
///
/// - `update(forKey:default:expiry:_:)` against `object` + `setObject` on the same storage (what an
///   app wrote before `update` existed, losing updates under concurrency);
/// - the same `update` against SQLite as its users write one (WAL, `synchronous=NORMAL`, one
///   transaction `BEGIN IMMEDIATE; SELECT; UPDATE; COMMIT` through statements prepared once, Stash's
///   JSON coder so the coders cost the same), and against GRDB 7 as its users write it (a
///   `DatabaseQueue`, the `Codable` record `PayloadRecord`, `dbQueue.write { db in }` fetching the
///   record, changing it and `update(db)`);
/// - a transaction updating 100 keys (`storage.transaction { tx in try tx.update … }`) against one
///   SQLite transaction of 100 `SELECT` + `UPDATE`, and one GRDB `write` doing the same.
///
/// Every side's stores are filled untimed; the decode, change and encode are timed on every side.
/// Every side is checked afterwards: each key holds its first score plus the increments made to it.
enum UpdateScenarios {
    static let keyCount = 1_000
    static let transactionSize = 100
    static let updateLabel = "update, codable"
    static let transactionLabel = "transaction of \(transactionSize) updates, codable"
    static let readThenWrite = "object + setObject"
    static let sqlite = "SQLite BEGIN IMMEDIATE; SELECT; UPDATE; COMMIT"
    static let sqliteTransaction = "SQLite transaction of \(transactionSize) SELECT + UPDATE"
    static let grdb = "GRDB DatabaseQueue"

    static func wantsUpdate(_ settings: Settings) -> Bool {
        settings.wants(updateLabel, peers: [readThenWrite, sqlite, grdb])
    }

    static func wantsTransaction(_ settings: Settings) -> Bool {
        settings.wants(transactionLabel, peers: [sqliteTransaction, grdb])
    }

    static func wanted(_ bench: Bench) -> Bool {
        wantsUpdate(bench.settings) || wantsTransaction(bench.settings)
    }

    /// The sides' stores, filled with the same values, and the increments each key has had.
    final class Stores {
        let stash: Storage<Payload>
        let sqlite: SQLiteStore
        let grdb: GRDBSide
        let codec = Codec<Payload>.stashJSON()
        /// Increments per key index: Stash's `update.` keys, its `rmw.` keys, SQLite's and GRDB's.
        var increments = Array(repeating: Array(repeating: 0, count: keyCount), count: 4)

        init(in directory: URL) throws {
            let kind = Kind<Payload>.codable
            stash = try Pair<Payload>.openStash(kind, in: directory.appendingPathComponent("Stash"))
            try FileManager.default.createDirectory(at: directory.appendingPathComponent("SQLite"), withIntermediateDirectories: true)
            sqlite = try SQLiteStore(path: directory.appendingPathComponent("SQLite/sqlite.db").path)
            grdb = try GRDBSide(pool: false, in: directory.appendingPathComponent("GRDB"))
            let values = (0..<keyCount).map { (key: Fixtures.key($0), value: kind.value($0, 0)) }
            try stash.setObjects(Dictionary(uniqueKeysWithValues: values.flatMap { [("update." + $0.key, $0.value), ("rmw." + $0.key, $0.value)] }))
            try sqlite.setAll(try values.map { ($0.key, try codec.encode($0.value)) })
            for pair in values { try grdb.set(pair.value, forKey: pair.key) }
        }

        /// The SQLite side's change: decode, increment, encode (the same coder as Stash's default).
        func increment(_ key: String, _ stored: Data) throws -> Data {
            var value = try codec.decode(stored)
            value.score += 1
            return try codec.encode(value)
        }

        /// Throws unless every side holds each key's first score plus its increments.
        func verify(_ label: String) throws {
            for index in 0..<keyCount {
                let key = Fixtures.key(index)
                let first = Payload.make(index).score
                guard let stored = try sqlite.value(forKey: key) else { throw BenchError("\(label): SQLite lost \(key)") }
                let scores = [try stash.object(forKey: "update." + key).score, try stash.object(forKey: "rmw." + key).score,
                              try codec.decode(stored).score, try grdb.get(key).score]
                for (side, score) in scores.enumerated() where abs(score - first - Double(increments[side][index])) > 1e-6 {
                    throw BenchError("\(label): side \(side) holds score \(score) for \(key), expected \(first) + \(increments[side][index])")
                }
            }
        }
    }

    static func run(bench: Bench) throws {
        print("== update and transactions, codable, \(keyCount) keys")
        let directory = try bench.freshDirectory("update")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = try Stores(in: directory)
        if wantsUpdate(bench.settings) { try runUpdate(bench, stores) }
        if wantsTransaction(bench.settings) { try runTransaction(bench, stores) }
        try stores.verify("update and transactions")
    }

    /// One update per operation; every side walks the keys in the same order.
    static func runUpdate(_ bench: Bench, _ stores: Stores) throws {
        let operations = bench.settings.batch
        let rounds = bench.settings.quick ? 4 : 15
        func indices(_ round: Int) -> [Int] { (0..<operations).map { (round * operations + $0) % keyCount } }
        let keys = (0..<keyCount).map(Fixtures.key)
        let (updateKeys, rmwKeys) = (keys.map { "update." + $0 }, keys.map { "rmw." + $0 })
        let stash = stores.stash
        let samples = try Measure.interleaved(rounds: rounds, [
            { round in
                try Measure.nsPerOp(operations) {
                    for index in indices(round) { consume(Int(try stash.update(forKey: updateKeys[index]) { $0.score += 1 }.score)) }
                }
            },
            { round in
                try Measure.nsPerOp(operations) {
                    for index in indices(round) {
                        var value = try stash.object(forKey: rmwKeys[index])
                        value.score += 1
                        try stash.setObject(value, forKey: rmwKeys[index])
                    }
                }
            },
            { round in
                try Measure.nsPerOp(operations) { for index in indices(round) { try stores.sqlite.update(CollectionOfOne(keys[index]), stores.increment) } }
            },
            { round in
                try Measure.nsPerOp(operations) { for index in indices(round) { try stores.grdb.update(CollectionOfOne(keys[index])) { $0.score += 1 } } }
            },
        ])
        for round in 0..<rounds {
            for index in indices(round) { for side in 0..<4 { stores.increments[side][index] += 1 } }
        }
        bench.add(Row("\(updateLabel) vs \(readThenWrite)", stash: samples[0], baseline: samples[1], vs: readThenWrite, target: .ratio(1.1)))
        bench.add(Row("\(updateLabel) vs \(sqlite)", stash: samples[0], baseline: samples[2], vs: sqlite, target: .ratio(0.5)))
        bench.add(Row("\(updateLabel) vs \(grdb)", stash: samples[0], baseline: samples[3], vs: grdb, target: .ratio(0.5)))
    }

    /// One transaction of 100 updates per operation, over the next 100 keys on every side.
    static func runTransaction(_ bench: Bench, _ stores: Stores) throws {
        let perSample = bench.settings.quick ? 2 : 5
        let rounds = bench.settings.quick ? 4 : 20
        let groups = (0..<keyCount / transactionSize).map { group in
            (group * transactionSize..<(group + 1) * transactionSize).map(Fixtures.key)
        }
        func group(_ round: Int, _ step: Int) -> Int { (round * perSample + step) % groups.count }
        let stash = stores.stash
        let samples = try Measure.interleaved(rounds: rounds, [
            { round in
                try Measure.nsPerOp(perSample) {
                    for step in 0..<perSample {
                        try stash.transaction { tx in
                            for key in groups[group(round, step)] { try tx.update(forKey: "update." + key) { $0.score += 1 } }
                        }
                    }
                }
            },
            { round in
                try Measure.nsPerOp(perSample) {
                    for step in 0..<perSample { try stores.sqlite.update(groups[group(round, step)], stores.increment) }
                }
            },
            { round in
                try Measure.nsPerOp(perSample) {
                    for step in 0..<perSample { try stores.grdb.update(groups[group(round, step)]) { $0.score += 1 } }
                }
            },
        ])
        for round in 0..<rounds {
            for step in 0..<perSample {
                for offset in 0..<transactionSize {
                    let index = group(round, step) * transactionSize + offset
                    for side in [0, 2, 3] { stores.increments[side][index] += 1 }
                }
            }
        }
        bench.add(Row("\(transactionLabel) vs \(sqliteTransaction)", stash: samples[0], baseline: samples[1], vs: sqliteTransaction,
                      unit: .ns, target: .ratio(1.0)))
        bench.add(Row("\(transactionLabel) vs \(grdb)", stash: samples[0], baseline: samples[2], vs: grdb, unit: .ns, target: .ratio(1.0)))
    }
}
