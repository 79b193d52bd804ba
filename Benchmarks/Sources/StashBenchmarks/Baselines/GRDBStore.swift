import Foundation
import GRDB

/// The benchmark's `Payload` as GRDB's users store it (issue #31): a `Codable` record in a table of
/// columns, keyed by the store's key; `roles` is a JSON column, as GRDB encodes arrays of a record.
struct PayloadRecord: Codable, FetchableRecord, PersistableRecord {
    static let databaseTableName = "payload"
    var key: String
    var id: Int
    var name: String
    var email: String
    var roles: [String]
    var score: Double
    var verified: Bool
    var bio: String

    init(_ payload: Payload, key: String) {
        self.key = key
        id = payload.id
        name = payload.name
        email = payload.email
        roles = payload.roles
        score = payload.score
        verified = payload.verified
        bio = payload.bio
    }

    var payload: Payload {
        Payload(id: id, name: name, email: email, roles: roles, score: score, verified: verified, bio: bio)
    }
}

/// A GRDB store of `Payload` records: a `DatabaseQueue` or a `DatabasePool` with GRDB's defaults,
/// one write transaction per `set` (`upsert`), one read per `get`, as an app writes it. Expiry is not
/// modelled (the app rows never expire values).
final class GRDBSide: Side {
    private let writer: any DatabaseWriter

    init(pool: Bool, in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("db.sqlite").path
        writer = pool ? try DatabasePool(path: path) : try DatabaseQueue(path: path)
        try writer.write { db in
            try db.create(table: PayloadRecord.databaseTableName, ifNotExists: true) { table in
                table.primaryKey("key", .text)
                table.column("id", .integer).notNull()
                table.column("name", .text).notNull()
                table.column("email", .text).notNull()
                table.column("roles", .jsonText).notNull()
                table.column("score", .double).notNull()
                table.column("verified", .boolean).notNull()
                table.column("bio", .text).notNull()
            }
        }
    }

    func set(_ value: Payload, forKey key: String, expiry: Date?) throws {
        try writer.write { db in try PayloadRecord(value, key: key).upsert(db) }
    }

    func get(_ key: String) throws -> Payload {
        guard let record = try writer.read({ db in try PayloadRecord.fetchOne(db, key: key) }) else {
            throw BenchError("GRDB: no record for \(key)")
        }
        return record.payload
    }

    func remove(_ key: String) throws {
        _ = try writer.write { db in try PayloadRecord.deleteOne(db, key: key) }
    }

    /// Read-modify-write of every key in `keys` in one write transaction, as GRDB's users write an
    /// update: `try dbQueue.write { db in … }` fetching each record, changing it and `update(db)`.
    func update(_ keys: some Sequence<String>, _ change: (inout PayloadRecord) -> Void) throws {
        try writer.write { db in
            for key in keys {
                guard var record = try PayloadRecord.fetchOne(db, key: key) else { throw BenchError("GRDB: no record for \(key)") }
                change(&record)
                try record.update(db)
            }
        }
    }

    func exists(_ key: String) throws -> Bool {
        try writer.read { db in try PayloadRecord.exists(db, key: key) }
    }
}
