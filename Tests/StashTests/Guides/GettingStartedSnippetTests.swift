import Foundation
import Observation
import Testing
import Stash // the public API only, as readers of the guide use it

/// The snippets of `Docs/GettingStarted.md` (also the DocC catalog's GettingStarted article) that
/// present the one-line set-up, prefix listing, the Observation types and `StorageError`'s equality,
/// compiled and run. A folder of the test's own replaces the caches folder.
@Suite("Getting started snippets")
struct GettingStartedSnippetTests {
    private struct Todo: Codable, Sendable, Equatable { var title: String; var done: Bool }

    @Test("the one-line set-up")
    func oneLineSetUp() throws {
        let directory = TemporaryDirectory()
        // --- guide begins (the locations are a folder of the test's own) ---
        let todos = try Storage<[Todo]>(name: "Todos", location: .folder(directory.url))
        _ = StorageLocation.persistent // the guide's location
        try todos.setObject([Todo(title: "Milk", done: false)], forKey: "inbox")

        let sessions = try Storage<User>(name: "Sessions", expiry: .seconds(3600), maxSize: 10_000_000,
                                         location: .folder(directory.url))
        _ = StorageLocation.caches // the guide's location
        // --- guide ends ---
        #expect(try todos.object(forKey: "inbox") == [Todo(title: "Milk", done: false)])
        #expect(sessions.path.hasSuffix("/Sessions"))
    }

    @Test("batches: all or none")
    func batches() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Cy", age: 50), forKey: "team.3")
        // --- guide begins ---
        var batch = StorageBatch<User>()
        batch.setObject(User(name: "Ada", age: 36), forKey: "team.1")
        batch.setObject(User(name: "Bob", age: 41), forKey: "team.2")
        batch.removeObject(forKey: "team.3")
        try storage.write(batch)

        try storage.setObjects(["a": User(name: "A", age: 1), "b": User(name: "B", age: 2)])
        try storage.removeObjects(forKeys: ["a", "b"])
        try await storage.async.write(batch)
        // --- guide ends ---
        #expect(Set(storage.allKeys) == ["team.1", "team.2"])
        #expect(try storage.object(forKey: "team.2") == User(name: "Bob", age: 41))
    }

    @Test("listing keys by prefix")
    func listingByPrefix() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        // --- guide begins ---
        try storage.setObject(User(name: "Ada", age: 36), forKey: "user.42.profile")
        try storage.setObject(User(name: "Bob", age: 41), forKey: "user.43.profile")
        print(storage.allKeys(withPrefix: "user.42."))
        let namespace = await storage.async.allKeys(withPrefix: "user.")
        // --- guide ends ---
        #expect(storage.allKeys(withPrefix: "user.42.") == ["user.42.profile"])
        #expect(Set(namespace) == ["user.42.profile", "user.43.profile"])
        try storage.setObject(User(name: "menu", age: 1), forKey: "cafe\u{301}.menu")
        #expect(storage.allKeys(withPrefix: "caf\u{E9}") == ["cafe\u{301}.menu"])
        #expect(storage.allKeys(withPrefix: "cafe").isEmpty)
    }

    @Test("the value, nothing, or a default; a prefix's rows in one call")
    func everydayReads() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "user.42")
        // --- guide begins ---
        let draft: User? = try storage.objectIfPresent(forKey: "draft")
        let settings = try storage.object(forKey: "settings", default: User(name: "Guest", age: 0))
        let later = try await storage.async.objectIfPresent(forKey: "draft")

        for (key, user) in try storage.objects(withPrefix: "user.") { print(key, user.name) }
        let rows = try await storage.async.objects(withPrefix: "user.")
        // --- guide ends ---
        #expect(draft == nil && later == nil)
        #expect(settings.name == "Guest")
        #expect(rows.map(\.key) == ["user.42"])
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @MainActor
    final class ProfileModel {
        let profile: ObservableValue<User>
        init(storage: Storage<User>) {
            profile = ObservableValue("me", in: storage, default: User(name: "", age: 0))
        }
        func birthday() { profile.value?.age += 1 }
        var problem: String? { profile.error.map { "\($0)" } }
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("binding, defaults and errors: the model of the guide")
    @MainActor
    func bindingModel() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let model = ProfileModel(storage: storage)
        #expect(model.profile.value == User(name: "", age: 0))
        model.birthday()
        #expect(try storage.object(forKey: "me") == User(name: "", age: 1))
        #expect(model.problem == nil)
        try storage.transformData().setObject(Data("{}".utf8), forKey: "me") // the model changed
        let reopened = ProfileModel(storage: storage)
        #expect(reopened.problem?.contains("\"me\"") == true)
    }

    // --- guide begins (in-memory storage, in a test target of the reader's own) ---
    @Test func aNewTodoIsStored() throws {
        let todos = try Storage<User>.inMemory(now: ManualClock().function)
        try todos.setObject(User(name: "Ada", age: 36), forKey: "me")
        #expect(try todos.objectIfPresent(forKey: "me")?.name == "Ada")
    }
    // --- guide ends ---

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @MainActor
    final class TeamModel {
        let me: ObservableValue<User>
        let team: ObservableCollection<User>

        init(storage: Storage<User>) {
            me = ObservableValue("me", in: storage)
            team = ObservableCollection(prefix: "team.", in: storage)
        }

        func rename(to name: String) throws {
            try me.set(User(name: name, age: me.value?.age ?? 0))
        }
    }

    @Test("SwiftUI and Observation: the model of the guide")
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @MainActor
    func observationModel() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        try storage.setObject(User(name: "Bob", age: 41), forKey: "team.bob")
        let model = TeamModel(storage: storage)
        #expect(model.me.value == User(name: "Ada", age: 36))
        #expect(model.team.values == ["team.bob": User(name: "Bob", age: 41)])
        try model.rename(to: "Ada L.")
        #expect(model.me.value == User(name: "Ada L.", age: 36))
        #expect(model.team.values.sorted { $0.key < $1.key }.map(\.key) == ["team.bob"])
    }

    // --- guide begins (in a test target of the reader's own) ---
    @Test func aMissingProfileIsNotFound() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: folder) }
        let storage = try Storage<User>(name: "store", directory: folder)
        #expect(throws: StorageError.notFound) { try storage.object(forKey: "me") }
    }
    // --- guide ends ---
}

/// The guide's update and transaction snippets.
@Suite("Getting started snippets: update and transaction")
struct GettingStartedUpdateSnippetTests {
    @Test("update in place")
    func updateInPlace() async throws {
        let directory = TemporaryDirectory()
        let counters = try Storage<Int>(name: "Counters", directory: directory.url)
        let storage = try Storage<User>(name: "Users", directory: directory.url)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        // --- guide begins ---
        let launches = try counters.update(forKey: "launches", default: 0) { $0 += 1 }
        try storage.update(forKey: "me") { user in user.age += 1 }
        let total = try await counters.async.update(forKey: "launches", default: 0) { $0 += 1 }
        // --- guide ends ---
        #expect(launches == 1 && total == 2)
        #expect(try storage.object(forKey: "me").age == 37)
    }

    @Test("transactions")
    func transactions() throws {
        let directory = TemporaryDirectory()
        let counters = try Storage<Int>(name: "Counters", directory: directory.url)
        try counters.setObject(100, forKey: "alice")
        // --- guide begins ---
        try counters.transaction { tx in
            let from = try tx.object(forKey: "alice")
            try tx.setObject(from - 10, forKey: "alice")
            try tx.update(forKey: "bob", default: 0) { $0 += 10 }
        }
        // --- guide ends ---
        #expect(try counters.object(forKey: "alice") == 90 && counters.object(forKey: "bob") == 10)
    }
}
