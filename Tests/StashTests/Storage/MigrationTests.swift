import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// `StorageMigrator`: every stored value to a new model, in batches, resumable, reporting what it cannot migrate.

@Suite("Migrations of every stored value to a new model")
struct MigrationTests {
    struct TodoV1: Codable, Sendable { var text: String }
    struct Todo: Codable, Sendable, Equatable {
        var title: String
        var notes: String
    }

    @Test("a registered migration turns every old value under the prefix into the new model, once, keeping expiries")
    func migratesEveryValueOnce() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let old = try Storage<TodoV1>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: TodoV1.self),
                                      now: clock.function)
        for index in 0..<250 { try old.setObject(TodoV1(text: "t\(index)"), forKey: "todo.\(index)") }
        try old.setObject(TodoV1(text: "later"), forKey: "todo.expiring", expiry: .seconds(60))
        try old.setObject(TodoV1(text: "other"), forKey: "other")
        let todos = old.transformCodable(ofType: Todo.self)
        var migrator = StorageMigrator<Todo>(keyPrefix: "todo.", batchSize: 40)
        migrator.registerMigration("v2", from: TodoV1.self) { Todo(title: $0.text, notes: "") }
        let report = try migrator.migrate(todos)
        #expect(report.applied == ["v2"] && report.migrated == 251 && report.failures.isEmpty)
        #expect(try todos.object(forKey: "todo.7") == Todo(title: "t7", notes: ""))
        #expect(try todos.entry(forKey: "todo.expiring").expiry == .date(clock.now.addingTimeInterval(60)))
        #expect(try old.object(forKey: "other").text == "other", "outside the prefix: untouched")
        let again = try migrator.migrate(todos)
        #expect(again.applied.isEmpty && again.migrated == 0, "remembered as done")
    }

    @Test("a value that does not migrate is kept as it was and reported; the others are migrated")
    func failuresAreReportedAndKept() throws {
        let directory = TemporaryDirectory()
        let data = try Storage<Data>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData())
        try data.setObject(Data(#"{"text":"ok"}"#.utf8), forKey: "a")
        try data.setObject(Data("garbage".utf8), forKey: "b")
        let todos = data.transformCodable(ofType: Todo.self)
        var migrator = StorageMigrator<Todo>()
        migrator.registerMigration("v2", from: TodoV1.self) { Todo(title: $0.text, notes: "") }
        let report = try migrator.migrate(todos)
        #expect(report.migrated == 1)
        #expect(report.failures.map(\.key) == ["b"])
        #expect(try data.object(forKey: "b") == Data("garbage".utf8))
        #expect(try todos.object(forKey: "a") == Todo(title: "ok", notes: ""))
    }

    @Test("migrations run in the order registered, each once; values already in the new model are left alone")
    func orderedSteps() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObjects(["a": 1, "b": 2])
        var first = StorageMigrator<Int>()
        first.registerMigration("double") { data in try JSONDecoder().decode(Int.self, from: data) * 2 }
        try first.migrate(storage)
        var second = first
        second.registerMigration("plus one") { data in try JSONDecoder().decode(Int.self, from: data) + 1 }
        let report = try second.migrate(storage)
        #expect(report.applied == ["plus one"])
        #expect(try storage.object(forKey: "a") == 3 && storage.object(forKey: "b") == 5)
    }
}

@Suite("Migrations killed at every system call", .serialized)
struct MigrationCrashTests {
    @Test("a migration killed at a pwrite or fsync leaves each value old or new, and running it again finishes the job",
          .enabled(if: Strace.isAvailable), arguments: [("pwrite64", 1), ("pwrite64", 3), ("pwrite64", 8), ("fsync", 2), ("fsync", 5)])
    func killedMigrationFinishesOnReopen(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let count = 95
        do {
            let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
            try storage.setObjects(Dictionary(uniqueKeysWithValues: (0..<count).map { ("k\($0)", Data("old \($0)".utf8)) }))
        }
        let torture = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        let strace = try #require(Strace.executable, "strace is needed (STASH_REQUIRE_STRACE is set): apt-get install strace")
        // A kill at a `pwrite` needs `pwrite` appends (through a mapping, an append makes no system call).
        let appends = syscall.hasPrefix("pwrite") ? ["--pwrite-appends"] : []
        let child = try ChildProcess(strace, Strace.arguments(killAt: syscall, occurrence: occurrence, command: [torture.path, "migrate", store] + appends))
        let watchdog = Watchdog(child, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        try #require(child.wait(upTo: TestDeadline.long), "the child never ended")
        #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        var new = 0
        for index in 0..<count {
            let text = String(decoding: try storage.object(forKey: "k\(index)"), as: UTF8.self)
            #expect(text == "old \(index)" || text == "new \(index)", "k\(index) holds \(text)")
            if text.hasPrefix("new") { new += 1 }
        }
        let report = try tortureMigratorForTests().migrate(storage)
        #expect(report.failures.isEmpty, "\(report.failures)")
        for index in 0..<count { #expect(try storage.object(forKey: "k\(index)") == Data("new \(index)".utf8)) }
        print("crash: migration killed at \(syscall) #\(occurrence) with \(new) of \(count) values new; the rerun migrated \(report.migrated)")
    }

    /// The migration of `StashTorture migrate` (Tests/StashTorture/Updates.swift).
    private func tortureMigratorForTests() -> StorageMigrator<Data> {
        var migrator = StorageMigrator<Data>(batchSize: 10)
        migrator.registerMigration("old to new") { data in
            let text = String(decoding: data, as: UTF8.self)
            guard text.hasPrefix("old ") else { throw CocoaError(.coderReadCorrupt) }
            return Data(("new " + text.dropFirst(4)).utf8)
        }
        return migrator
    }

    @Test("a migration resumed after a failed batch migrates every key once, also keys that Swift's String < does not order (decomposed Hangul), and the empty key",
          arguments: [["m.\u{1100}\u{1161}", "m.\u{AC00}\u{AC00}"], ["m.\u{AC00}\u{AC00}", "m.\u{1100}\u{1161}"], ["", "b"]])
    func resumedMigrationMigratesEveryKeyOnce(keys: [String]) throws {
        // The first pair is the case: neither key is `<` the other, though they differ (NFC "m.가" and "m.가가").
        let directory = TemporaryDirectory()
        let storage = try DiskStorage(config: directory.diskConfig(maxSize: 400), transformer: TransformerFactory.forCodable(ofType: String.self))
        for key in keys { try storage.setObject("v", forKey: key) }
        let calls = Locked(0)
        let failing = Locked(true)
        var migrator = StorageMigrator<String>(keyPrefix: "", batchSize: 1)
        migrator.registerMigration("bang") { data in
            let old = try JSONDecoder().decode(String.self, from: data)
            // The second batch, while failing: a value over maxSize, so its commit fails and the run stops.
            let call = calls.withLock { calls in
                calls += 1
                return calls
            }
            if call == 2, failing.withLock({ $0 }) { return String(repeating: "y", count: 1_000) }
            return old + "!"
        }
        #expect(throws: StorageError.self) { try migrator.migrate(storage) }
        failing.withLock { $0 = false }
        let report = try migrator.migrate(storage)
        #expect(report.migrated == 1, "\(report)")
        for key in keys {
            #expect(try storage.object(forKey: key) == "v!", "key \(key.unicodeScalars.map { String($0.value, radix: 16) }): migrated not exactly once")
        }
    }
}
