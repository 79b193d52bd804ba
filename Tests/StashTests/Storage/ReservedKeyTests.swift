import Foundation
import Observation
import Testing
@testable import Stash
@testable import StashEngine

/// Stash's own bookkeeping in a store (a migration's progress) never shows: not in a listing, a count
/// or an observer; and no app key can be one of its keys.
@Suite("Stash's reserved keys never show", .serialized) // the main actor, one test at a time
@MainActor
struct ReservedKeyTests {
    /// A store of `Int`s under "n." and "m.", one migration run over it (its progress now stored).
    private static func migrated(_ directory: TemporaryDirectory) throws -> Storage<Int> {
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObjects(["n.1": 1, "n.2": 2, "m.1": 3])
        var migrator = StorageMigrator<Int>(keyPrefix: "n.", batchSize: 1)
        migrator.registerMigration("double") { data in try JSONDecoder().decode(Int.self, from: data) * 2 }
        #expect(try migrator.migrate(storage).migrated == 2)
        // The progress is in the store: the bytes are there, under the reserved namespace.
        #expect(storage.hybridStorage.engine.sync { $0.keys }.contains(where: ReservedKeys.contains))
        return storage
    }

    @Test("allKeys, allKeys(withPrefix:), entryInfos and counts leave the migration's progress out, also after a reopen")
    func listingsAndCounts() async throws {
        let directory = TemporaryDirectory()
        let storage = try Self.migrated(directory)
        for view in [storage, try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))] {
            #expect(Set(view.allKeys) == ["n.1", "n.2", "m.1"])
            #expect(view.allKeys(withPrefix: "").count == 3)
            #expect(view.allKeys(withPrefix: "\u{1}").isEmpty)
            #expect(view.allKeys(withPrefix: StorageMigrator<Int>.reservedKeyPrefix).isEmpty)
            #expect(Set(view.hybridStorage.entryInfos.map(\.key)) == ["n.1", "n.2", "m.1"])
            #expect(view.hybridStorage.diskStorage.counts(expiredBy: Date()).entries == 3)
            #expect(await view.async.allKeys().count == 3)
            #expect(await view.async.allKeys(withPrefix: "\u{1}").isEmpty)
        }
    }

    @Test("objects(withPrefix:) leaves the migration's progress out, whatever the prefix")
    func objectsWithPrefix() async throws {
        let directory = TemporaryDirectory()
        let storage = try Self.migrated(directory)
        #expect(try storage.objects(withPrefix: "").map(\.key) == ["m.1", "n.1", "n.2"])
        #expect(try storage.objects(withPrefix: "\u{1}").isEmpty)
        #expect(try await storage.async.objects(withPrefix: "").map(\.key) == ["m.1", "n.1", "n.2"])
        #expect(try storage.transformData().objects(withPrefix: "").count == 3)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("observers, change streams and an ObservableCollection of every key never hear the progress")
    func observers() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObjects(["n.1": 1, "n.2": 2])
        let heard = Locked<[StorageChange]>([])
        let observer = ObserverBox()
        storage.addStorageObserver(observer) { _, _, change in heard.withLock { $0.append(change) } }
        let everything = ObservableCollection(prefix: "", in: storage)
        let reserved = ObservableCollection(prefix: "\u{1}", in: storage)

        var migrator = StorageMigrator<Int>(keyPrefix: "n.", batchSize: 1)
        migrator.registerMigration("double") { data in try JSONDecoder().decode(Int.self, from: data) * 2 }
        try migrator.migrate(storage)
        try storage.removeAll() // removes the progress too
        storage.waitForObservers()
        everything.applyReceivedChanges()
        reserved.applyReceivedChanges()

        #expect(heard.withLock { $0 } == [.add(key: "n.1"), .add(key: "n.2"), .removeAll])
        #expect(everything.errors.isEmpty && everything.values.isEmpty)
        #expect(reserved.values.isEmpty && reserved.errors.isEmpty)
        _ = observer
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("an ObservableCollection made after a migration lists the app's keys only")
    func collectionSnapshot() throws {
        let directory = TemporaryDirectory()
        let storage = try Self.migrated(directory)
        let everything = ObservableCollection(prefix: "", in: storage)
        #expect(everything.sortedKeys == ["m.1", "n.1", "n.2"])
        #expect(everything.errors.isEmpty)
    }

    @Test("writes and removals of a key in the reserved namespace throw reservedKey and write nothing, on every path")
    func appKeysCannotCollide() async throws {
        let directory = TemporaryDirectory()
        let storage = try Self.migrated(directory)
        let progress = StorageMigrator<Int>.reservedKeyPrefix + "migrations"
        let refused = StorageError.reservedKey(progress)
        #expect(throws: refused) { try storage.setObject(0, forKey: progress) }
        #expect(throws: refused) { try storage.removeObject(forKey: progress) }
        #expect(throws: refused) { try storage.hybridStorage.diskStorage.setObject(0, forKey: progress) }
        #expect(throws: refused) { try storage.update(forKey: progress, default: 0) { $0 += 1 } }
        #expect(throws: refused) { try storage.setObjects(["ok": 1, progress: 0]) }
        #expect(throws: refused) { try storage.removeObjects(forKeys: [progress]) }
        #expect(throws: refused) { try storage.transaction { tx in try tx.setObject(0, forKey: progress) } }
        #expect(throws: refused) { try storage.transaction { tx in try tx.removeObject(forKey: progress) } }
        await #expect(throws: refused) { try await storage.async.setObject(0, forKey: progress) }
        #expect(throws: StorageError.reservedKey("\u{1}stash.other")) { try storage.setObject(0, forKey: "\u{1}stash.other") }
        #expect(!storage.allKeys.contains("ok"), "the batch wrote nothing")
        #expect(StorageError.reservedKey(progress).description.contains("stash."))

        // Keys that only look alike are the app's: another control character, a combining mark after U+0001.
        for key in ["\u{2}stash.migrations", "\u{1}\u{301}stash.migrations", "\u{1}Stash.x", "stash.migrations"] {
            try storage.setObject(7, forKey: key)
            #expect(storage.allKeys.contains(key))
        }
        // The migration's progress survived: it runs no more.
        var migrator = StorageMigrator<Int>(keyPrefix: "n.", batchSize: 1)
        migrator.registerMigration("double") { data in try JSONDecoder().decode(Int.self, from: data) * 2 }
        #expect(try migrator.migrate(storage).applied.isEmpty)
        #expect(try storage.object(forKey: "n.2") == 4)
    }
}

private final class ObserverBox: Sendable {}
