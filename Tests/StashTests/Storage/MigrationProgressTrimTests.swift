import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A store trimmed to its `maxSize` evicts the least recently used values, but never Stash's own
/// bookkeeping: a migration's progress, whose loss would start the migration over (or run a finished
/// one again on values already migrated).
@Suite("A size trim never evicts a migration's progress")
struct MigrationProgressTrimTests {
    /// A migration "bang" of the strings under "m." that appends "!", so that a value migrated twice
    /// shows ("a!!"); while `failing` is set, "b" turns into a value over any small `maxSize`, so the
    /// batch holding it fails to commit and the migration stops after "m.a".
    private static func migrator(failing: Locked<Bool>) -> StorageMigrator<String> {
        var migrator = StorageMigrator<String>(keyPrefix: "m.", batchSize: 1)
        migrator.registerMigration("bang") { data in
            let old = try JSONDecoder().decode(String.self, from: data)
            if old == "b", failing.withLock({ $0 }) { return String(repeating: "y", count: 1_000) }
            return old + "!"
        }
        return migrator
    }

    /// A 100-byte value (as JSON).
    private static let filler = String(repeating: "x", count: 98)

    private static func hasProgress(_ storage: DiskStorage<String>) -> Bool {
        storage.engine.record(forKey: ReservedKeys.migrationProgress) != nil
    }

    @Test("a migration stopped half way keeps its progress through a trim to maxSize, and resumes after the last key it migrated")
    func interruptedMigrationResumesAfterTrim() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try DiskStorage(config: directory.diskConfig(maxSize: 400),
                                      transformer: TransformerFactory.forCodable(ofType: String.self), now: clock.function)
        try storage.setObjects(["m.a": "a", "m.b": "b", "m.c": "c"])
        let failing = Locked(true)
        let migrator = Self.migrator(failing: failing)
        #expect(throws: StorageError.self) { try migrator.migrate(storage) } // "b"'s batch is too large to commit
        #expect(try storage.object(forKey: "m.a") == "a!" && storage.object(forKey: "m.b") == "b")
        try #require(Self.hasProgress(storage))

        // The progress is now the least recently used value: three fillers after it, then the app's
        // values read (reads count as use), then a fourth filler takes the store past maxSize.
        for index in 0..<3 {
            clock.advance(by: 1)
            try storage.setObject(Self.filler, forKey: "f\(index)")
        }
        clock.advance(by: 1)
        for key in ["m.a", "m.b", "m.c"] { _ = try storage.object(forKey: key) }
        clock.advance(by: 1)
        try storage.setObject(Self.filler, forKey: "f3")

        #expect(Self.hasProgress(storage), "the trim evicted the migration's progress")
        #expect(!storage.existsObject(forKey: "f0"), "the least recently used app value goes instead")
        #expect(storage.totalSize <= 400)
        failing.withLock { $0 = false }
        let report = try migrator.migrate(storage)
        #expect(report.migrated == 2, "resumed after m.a, not from the start: \(report)")
        #expect(try ["m.a", "m.b", "m.c"].map { try storage.object(forKey: $0) } == ["a!", "b!", "c!"])
    }

    @Test("a finished migration is not run again after a store is trimmed to nothing, by trim(toSize:) or by writes past maxSize",
          arguments: [true, false])
    func finishedMigrationStaysFinished(explicitTrim: Bool) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try DiskStorage(config: directory.diskConfig(maxSize: 300),
                                      transformer: TransformerFactory.forCodable(ofType: String.self), now: clock.function)
        try storage.setObjects(["m.a": "a", "m.b": "b"])
        let migrator = Self.migrator(failing: Locked(false))
        #expect(try migrator.migrate(storage).migrated == 2)
        if explicitTrim {
            clock.advance(by: 1)
            try storage.trim(toSize: 0)
            #expect(storage.allKeys.isEmpty)
        } else {
            for index in 0..<20 {
                clock.advance(by: 1)
                try storage.setObject(Self.filler, forKey: "f\(index)")
                #expect(storage.totalSize <= 300)
            }
            #expect(!storage.existsObject(forKey: "m.a") && !storage.existsObject(forKey: "m.b"))
        }
        #expect(Self.hasProgress(storage), "the trim evicted the migration's progress")
        // A value the new app writes afterwards is in the new model already: the migration must not touch it.
        try storage.setObject("z", forKey: "m.z")
        let again = try migrator.migrate(storage)
        #expect(again.applied.isEmpty && again.migrated == 0, "the finished migration ran again: \(again)")
        #expect(try storage.object(forKey: "m.z") == "z")
    }

    @Test("through a Storage (memory in front), writes past maxSize evict the app's values and keep the progress, also after a reopen")
    func progressSurvivesThroughStorageAndReopen() throws {
        let directory = TemporaryDirectory()
        let config = directory.diskConfig(maxSize: 250)
        let transformer = TransformerFactory.forCodable(ofType: String.self)
        do {
            let storage = try Storage<String>(diskConfig: config, transformer: transformer)
            try storage.setObjects(["m.a": "a"])
            #expect(try Self.migrator(failing: Locked(false)).migrate(storage).migrated == 1)
            for index in 0..<10 { try storage.setObject(Self.filler, forKey: "f\(index)") }
            #expect(storage.totalSize <= 250)
        }
        let reopened = try DiskStorage(config: config, transformer: transformer)
        #expect(Self.hasProgress(reopened))
        #expect(reopened.allKeys.count == 2, "\(reopened.allKeys)")
        #expect(try Self.migrator(failing: Locked(false)).migrate(reopened).applied.isEmpty)
    }

    @Test("the progress counts in maxSize like any value: with large bookkeeping the store still holds maxSize after every write")
    func largeProgressStillHoldsMaxSize() throws {
        let directory = TemporaryDirectory()
        let storage = try DiskStorage(config: directory.diskConfig(maxSize: 300),
                                      transformer: TransformerFactory.forCodable(ofType: String.self))
        // The progress names the last key migrated: a 250-byte key makes it larger than 250 bytes.
        let longKey = "m." + String(repeating: "k", count: 250)
        try storage.setObject("a", forKey: longKey)
        #expect(try Self.migrator(failing: Locked(false)).migrate(storage).migrated == 1)
        for index in 0..<4 {
            try storage.setObject(Self.filler, forKey: "f\(index)")
            #expect(storage.totalSize <= 300, "after f\(index): \(storage.totalSize)")
            #expect(Self.hasProgress(storage))
        }
    }
}
