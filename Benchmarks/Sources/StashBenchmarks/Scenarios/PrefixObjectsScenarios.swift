import Foundation
import GRDB
import Stash

/// A list screen's read: the values under a key prefix with their keys, in key order, decoded, in
/// a store of `count` Codable values (~200 B of JSON each). Stash's `objects(withPrefix:)` against
/// SQLite's range scan `SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key` through a
/// statement prepared once (values decoded with the same reused `JSONDecoder`), and against GRDB 7
/// as its users write it: a `DatabaseQueue`, a `Codable` record (`FetchableRecord & PersistableRecord`,
/// one column per field), `Record.filter(key >= lower && key < upper).order(key).fetchAll(db)`.
///
/// Two prefixes: `user.0001` (100 keys: a screen of rows) and `user.` (every key).
enum PrefixObjectsScenarios {
    static func count(_ settings: Settings) -> Int { settings.quick ? 10_000 : 100_000 }

    static func labels(_ count: Int) -> [(prefix: String, label: String, size: Int)] {
        [("user.0001", "objects(withPrefix:) 100 of \(count) codable", 100),
         ("user.", "objects(withPrefix:) all \(count) codable", count)]
    }

    static func wanted(_ bench: Bench) -> Bool {
        labels(count(bench.settings)).contains { bench.settings.wants($0.label, peers: ["SQLite", "GRDB"]) }
    }

    /// GRDB's user: a table with a column per field, the key as primary key.
    struct PayloadRecord: Codable, FetchableRecord, PersistableRecord {
        static let databaseTableName = "payload"
        var key: String
        var id: Int
        var name: String
        var email: String
        var roles: [String]
        var score: Double
        var verified: Bool

        init(key: String, _ payload: Payload) {
            (self.key, id, name, email, roles, score, verified) =
                (key, payload.id, payload.name, payload.email, payload.roles, payload.score, payload.verified)
        }
    }

    static func run(bench: Bench) throws {
        let count = count(bench.settings)
        print("== objects(withPrefix:), \(count) codable values")
        let directory = try bench.freshDirectory("prefix-objects")
        defer { try? FileManager.default.removeItem(at: directory) }
        let kind = Kind<Payload>.codable
        let codec = Codec<Payload>.json()
        let stash = try Pair<Payload>.openStash(kind, in: directory.appendingPathComponent("Stash"))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("SQLite"), withIntermediateDirectories: true)
        let sqlite = try SQLiteStore(path: directory.appendingPathComponent("SQLite/sqlite.db").path)
        let grdb = try DatabaseQueue(path: directory.appendingPathComponent("grdb.sqlite").path)
        try grdb.write { db in
            try db.create(table: "payload") { table in
                table.primaryKey("key", .text)
                table.column("id", .integer).notNull()
                table.column("name", .text).notNull()
                table.column("email", .text).notNull()
                table.column("roles", .jsonText).notNull()
                table.column("score", .double).notNull()
                table.column("verified", .boolean).notNull()
            }
        }

        // The same values on every side, written in batches of 1,000 (not timed).
        for start in stride(from: 0, to: count, by: 1_000) {
            let page = (start..<min(start + 1_000, count)).map { (key: Fixtures.key($0), value: kind.value($0, 0)) }
            try stash.setObjects(Dictionary(uniqueKeysWithValues: page.map { ($0.key, $0.value) }))
            try sqlite.setAll(try page.map { ($0.key, try codec.encode($0.value)) })
            try grdb.write { db in for pair in page { try PayloadRecord(key: pair.key, pair.value).insert(db) } }
        }

        func viaSQLite(_ prefix: String) throws -> [(key: String, value: Payload)] {
            var rows: [(key: String, value: Payload)] = []
            var failure: (any Error)?
            try sqlite.pairs(withASCIIPrefix: prefix) { key, data in
                do { rows.append((key, try codec.decode(data))) } catch { failure = error }
            }
            if let failure { throw failure }
            return rows
        }
        func viaGRDB(_ prefix: String) throws -> [PayloadRecord] {
            var upper = Array(prefix.utf8)
            upper[upper.count - 1] += 1
            let (low, high) = (prefix, String(decoding: upper, as: UTF8.self))
            return try grdb.read { db in
                try PayloadRecord.filter(Column("key") >= low && Column("key") < high).order(Column("key")).fetchAll(db)
            }
        }

        for (prefix, label, size) in labels(count) where bench.settings.wants(label, peers: ["SQLite", "GRDB"]) {
            // Every side must return the same rows before anything is timed.
            let expected = (size == count ? 0..<count : 100..<200).map(Fixtures.key)
            let rows = try stash.objects(withPrefix: prefix)
            guard rows.map(\.key) == expected, try viaSQLite(prefix).map(\.key) == expected,
                  try viaGRDB(prefix).map(\.key) == expected, rows.first?.value == kind.value(size == count ? 0 : 100, 0) else {
                throw BenchError("\(label): the engines disagree on the rows under \(prefix)")
            }
            let rounds = size == count ? (bench.settings.quick ? 3 : 7) : (bench.settings.quick ? 5 : 15)
            let samples = try Measure.interleaved(rounds: rounds, [
                { _ in try Measure.nsPerOp(1) { consume(try stash.objects(withPrefix: prefix).count) } },
                { _ in try Measure.nsPerOp(1) { consume(try viaSQLite(prefix).count) } },
                { _ in try Measure.nsPerOp(1) { consume(try viaGRDB(prefix).count) } },
            ])
            bench.add(Row("\(label) vs SQLite", stash: samples[0], baseline: samples[1], vs: "SQLite", unit: .ns, target: .ratio(1.0)))
            bench.add(Row("\(label) vs GRDB", stash: samples[0], baseline: samples[2], vs: "GRDB", unit: .ns))
        }
    }
}
