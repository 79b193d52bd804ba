public import Foundation
import StashEngine

/// Named, ordered migrations of every stored value of a store (or of a key prefix) to a new model,
/// remembered as done: GRDB's `DatabaseMigrator` for a key-value store.
///
/// ```swift
/// var migrator = StorageMigrator<Todo>(keyPrefix: "todo.")
/// migrator.registerMigration("v2: title split into title and notes", from: TodoV1.self) { old in
///     Todo(title: old.text, notes: "")
/// }
/// let report = try migrator.migrate(todos)
/// for failure in report.failures { print("kept as it was: \(failure.key): \(failure.error)") }
/// ```
///
/// Each migration runs once per store, in the order registered. It reads the stored bytes of each
/// key, in key order, turns them into a `T` with its closure and stores that with the storage's
/// transformer, keeping each value's expiry; `batchSize` values at a time, each batch one commit
/// (``StorageBatch``) that also records how far the migration got. So a kill at any moment leaves
/// every value old or new, never lost, and running the migrator again (after a reopen) goes on
/// where it stopped and finishes the job. A value the closure cannot turn into a `T` is kept as it
/// is and reported in ``MigrationReport/failures``, never dropped; bytes that already decode as `T`
/// (written by the new app while the migration ran) are left alone.
///
/// The progress of every migration is kept in the store itself, under one key of a namespace Stash
/// keeps for itself (``reservedKeyPrefix``): no listing, count or observer shows it, and the app's
/// writes and removals of such keys throw ``StorageError/reservedKey(_:)``. Writes by other threads or
/// processes may go on while it runs: each batch is one step as ``Storage/transaction(_:)`` is.
public struct StorageMigrator<T: Sendable>: Sendable {
    /// The beginning of the keys Stash keeps for its own bookkeeping, migration progress among them
    /// (U+0001 "stash."): left out of every listing and observer, and refused as an app's key.
    public static var reservedKeyPrefix: String { ReservedKeys.prefix }

    private struct Migration: Sendable {
        var name: String
        var migrate: @Sendable (Data) throws -> T
    }

    /// Only keys with this prefix are migrated ("" for every key).
    public let keyPrefix: String
    /// How many values each commit migrates.
    public let batchSize: Int
    private var migrations: [Migration] = []

    /// A migrator of the values whose keys begin with `keyPrefix`, `batchSize` per commit.
    public init(keyPrefix: String = "", batchSize: Int = 100) {
        self.keyPrefix = keyPrefix
        self.batchSize = max(1, batchSize)
    }

    /// Registers a migration from the stored bytes: `migrate` gets a value's bytes and returns it as a `T`.
    /// - Parameters:
    ///   - name: Identifies the migration in the store: never rename one that has shipped.
    ///   - migrate: Turns one stored value's bytes into the new model; a throw reports that value.
    public mutating func registerMigration(_ name: String, _ migrate: @escaping @Sendable (Data) throws -> T) {
        precondition(!migrations.contains { $0.name == name }, "a migration named \(name) is registered already")
        migrations.append(Migration(name: name, migrate: migrate))
    }

    /// Registers a migration from an older `Decodable` model stored as JSON: each value is decoded as
    /// `Old` with `decoder`, then turned into a `T` by `migrate`.
    public mutating func registerMigration<Old: Decodable & Sendable>(_ name: String, from: Old.Type, decoder: JSONDecoder = JSONDecoder(),
                                                          _ migrate: @escaping @Sendable (Old) throws -> T) {
        let coder = DecoderBox(decoder)
        registerMigration(name) { data in try migrate(coder.decoder.decode(Old.self, from: data)) }
    }

    /// Runs every migration not yet done on `storage`'s store; memory and observers see the new values.
    /// - Returns: What was migrated, and each value that could not be.
    /// - Throws: A failed commit (what was committed before it stays; run again to go on), ``StorageError/readOnly(directory:)``.
    @discardableResult
    public func migrate(_ storage: Storage<T>) throws -> MigrationReport {
        try migrate(storage.hybridStorage.diskStorage)
    }

    /// Runs every migration not yet done on the store of `storage`.
    @discardableResult
    public func migrate(_ storage: DiskStorage<T>) throws -> MigrationReport {
        try storage.checkWritable()
        var report = MigrationReport()
        for migration in migrations {
            try run(migration, on: storage, report: &report)
        }
        return report
    }

    /// Runs `migration` unless its progress says done: the keys listed once, then batch after batch.
    private func run(_ migration: Migration, on storage: DiskStorage<T>, report: inout MigrationReport) throws {
        let engine = storage.engine
        let now = storage.now()
        let after = try engine.sync { store in try Self.progress(in: store, now: now)[migration.name] }
        guard after != Self.doneMarker else { return }
        // In the order of the keys' NFC bytes, which is one total order of every key: Swift's `<` on
        // `String` is not (on decomposed Hangul two different keys are each not less than the other),
        // so a migration resumed by `$0 > after` could skip a key, or migrate one twice.
        let resumeAfter = after.map(KeyOrdering.bytes)
        let keys = KeyOrdering.sorted(engine.sync { $0.keys }.filter { key in
            key.hasPrefix(keyPrefix) && !ReservedKeys.contains(key)
                && resumeAfter.map { $0.lexicographicallyPrecedes(KeyOrdering.bytes(key)) } ?? true
        })
        var start = 0
        repeat {
            let chunk = Array(keys[start..<min(start + batchSize, keys.count)])
            start += chunk.count
            let marker = start < keys.count ? chunk[chunk.count - 1] : Self.doneMarker
            let outcome = try engine.bracket(now: now, config: storage.config.writeSettings) { store in
                var changes: [DiskBatchChange] = []
                var outcome = (migrated: 0, failures: [MigrationFailure]())
                for key in chunk {
                    guard let (data, record, _) = try? store.read(key, now: now) else { continue } // removed meanwhile
                    do {
                        let value = try migration.migrate(data)
                        let expiry = StoredTime.date(record.expiry)
                        changes.append(.set(key: key, data: try storage.transformer.encode(value), expiry: expiry))
                        outcome.migrated += 1
                    } catch {
                        // Bytes the new model reads already were written by the new app: nothing to do.
                        if (try? storage.transformer.decode(data)) == nil {
                            outcome.failures.append(MigrationFailure(key: key, migration: migration.name, error: error))
                        }
                    }
                }
                // Every migration's progress, this one's moved on, in the same commit as its values.
                var progress = try Self.progress(in: store, now: now)
                progress[migration.name] = marker
                changes.append(.set(key: ReservedKeys.migrationProgress, data: try JSONEncoder().encode(progress), expiry: .distantFuture))
                return (changes, outcome)
            } onCommit: { _, _, _ in }
            report.migrated += outcome.migrated
            report.failures += outcome.failures
        } while start < keys.count
        report.applied.append(migration.name)
    }

    private static var doneMarker: String { "\u{0}done" }

    /// Each migration's progress, by name: the last key it migrated, or ``doneMarker``; a migration
    /// not listed has not started.
    private static func progress(in store: DiskStore, now: Date) throws -> [String: String] {
        let data: Data
        do {
            data = try store.read(ReservedKeys.migrationProgress, now: now).data
        } catch StorageError.notFound {
            return [:]
        }
        do {
            return try JSONDecoder().decode([String: String].self, from: data)
        } catch {
            // Running migrations again from the start could apply one twice: stop instead.
            throw StorageError.corrupted("the progress of the store's migrations does not decode (\(error))")
        }
    }
}

/// What a ``StorageMigrator`` run did.
public struct MigrationReport: Sendable {
    /// The migrations run this time (not those done before), in order.
    public var applied: [String] = []
    /// How many values were migrated.
    public var migrated = 0
    /// The values that could not be migrated; each is kept as it was.
    public var failures: [MigrationFailure] = []
}

/// A value a migration could not turn into the new model: kept in the store as it was.
public struct MigrationFailure: Sendable, CustomStringConvertible {
    /// The value's key.
    public var key: String
    /// The migration's name.
    public var migration: String
    /// Why: the migration closure's error (a `DecodingError`, say).
    public var error: any Error

    public var description: String { "\(migration): \(key): \(error)" }
}

/// A JSON decoder shared by a migration's closure.
private final class DecoderBox: @unchecked Sendable {
    // @unchecked Sendable: Foundation's JSONDecoder is thread-safe to use; its settings never change here.
    let decoder: JSONDecoder

    init(_ decoder: JSONDecoder) {
        self.decoder = decoder
    }
}
