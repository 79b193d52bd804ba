import Foundation
import Testing
import Stash // the public API only, as readers of the guide use it

// The snippets of `Docs/ChangingYourModel.md`, compiled and run: one model-change test per case of the
// guide, each storing values with the old model and reading them with the new one.

@Suite("Changing your model")
struct ChangingYourModelTests {
    // --- guide begins: adding a field ---
    struct Todo: Codable, Sendable {
        var title: String
        var dueDate: Date?        // new: old values read as nil
    }
    // --- guide ends ---
    struct TodoV1: Codable, Sendable { var title: String }

    // --- guide begins: decodeIfPresent ---
    struct Task: Codable, Sendable {
        var title: String
        var priority: Int         // new: old values read as 0

        init(title: String, priority: Int) {
            self.title = title
            self.priority = priority
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            title = try container.decode(String.self, forKey: .title)
            priority = try container.decodeIfPresent(Int.self, forKey: .priority) ?? 0
        }
    }
    // --- guide ends ---

    // --- guide begins: renamed field ---
    struct Note: Codable, Sendable {
        var headline: String      // was `title`

        enum CodingKeys: String, CodingKey {
            case headline = "title"
        }
    }
    // --- guide ends ---

    // --- guide begins: versioned migration (models) ---
    struct ContactV1: Codable, Sendable { var name: String }
    struct Contact: Codable, Sendable { var firstName: String; var lastName: String }
    // --- guide ends ---

    @Test("a new optional field: old values read with nil")
    func optionalField() throws {
        let directory = TemporaryDirectory()
        let old = try Storage<TodoV1>(name: "Todos", directory: directory.url)
        try old.setObject(TodoV1(title: "Milk"), forKey: "t")
        let todos = old.transformCodable(ofType: Todo.self)
        let todo = try todos.object(forKey: "t")
        #expect(todo.title == "Milk" && todo.dueDate == nil)
    }

    @Test("a new field with decodeIfPresent: old values read with the default")
    func decodeIfPresent() throws {
        let directory = TemporaryDirectory()
        let old = try Storage<TodoV1>(name: "Tasks", directory: directory.url)
        try old.setObject(TodoV1(title: "Write"), forKey: "t")
        let tasks = old.transformCodable(ofType: Task.self)
        #expect(try tasks.object(forKey: "t").priority == 0)
        try tasks.update(forKey: "t") { $0.priority = 2 }
        #expect(try tasks.object(forKey: "t").priority == 2)
    }

    @Test("a renamed field with CodingKeys: old values read")
    func renamedField() throws {
        let directory = TemporaryDirectory()
        let old = try Storage<TodoV1>(name: "Notes", directory: directory.url)
        try old.setObject(TodoV1(title: "Hello"), forKey: "n")
        let notes = old.transformCodable(ofType: Note.self)
        #expect(try notes.object(forKey: "n").headline == "Hello")
    }

    @Test("a new shape without a migration: decodingFailed, and the bytes are kept")
    func newShapeFailsAndKeeps() throws {
        let directory = TemporaryDirectory()
        let old = try Storage<ContactV1>(name: "Contacts", directory: directory.url)
        try old.setObject(ContactV1(name: "Ada Lovelace"), forKey: "contact.1")
        let contacts = old.transformCodable(ofType: Contact.self)
        #expect(throws: StorageError.self) { _ = try contacts.object(forKey: "contact.1") }
        #expect(try old.object(forKey: "contact.1").name == "Ada Lovelace")
    }

    @Test("a versioned migration: every old value in the new shape, failures reported and kept")
    func versionedMigration() throws {
        let directory = TemporaryDirectory()
        let old = try Storage<ContactV1>(name: "Contacts", directory: directory.url)
        try old.setObject(ContactV1(name: "Ada Lovelace"), forKey: "contact.1")
        try old.setObject(ContactV1(name: "Plato"), forKey: "contact.2")
        try old.transformData().setObject(Data("not json".utf8), forKey: "contact.3")
        let contacts = old.transformCodable(ofType: Contact.self)
        // --- guide begins: versioned migration ---
        var migrator = StorageMigrator<Contact>(keyPrefix: "contact.")
        migrator.registerMigration("v2: name split", from: ContactV1.self) { old in
            let parts = old.name.split(separator: " ", maxSplits: 1).map(String.init)
            return Contact(firstName: parts.first ?? "", lastName: parts.count > 1 ? parts[1] : "")
        }
        let report = try migrator.migrate(contacts)
        for failure in report.failures {
            print("kept as it was:", failure.key, failure.error)
        }
        // --- guide ends ---
        #expect(try contacts.object(forKey: "contact.1").lastName == "Lovelace")
        #expect(try contacts.object(forKey: "contact.2").firstName == "Plato")
        #expect(report.failures.map(\.key) == ["contact.3"])
        #expect(try old.transformData().object(forKey: "contact.3") == Data("not json".utf8))
        #expect(try migrator.migrate(contacts).applied.isEmpty, "done once")
    }

    @Test("other coder settings: old values migrated with the old decoder")
    func coderSettingsChanged() throws {
        let directory = TemporaryDirectory()
        struct Event: Codable, Sendable, Equatable { var at: Date }
        let event = Event(at: Date(timeIntervalSince1970: 1_800_000_000))
        do { // the old app: a plain JSONEncoder
            let old = try Storage<Event>(name: "Events", directory: directory.url)
            try old.setObject(event, forKey: "e")
        }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let events = try Storage<Event>(name: "Events", directory: directory.url, encoder: encoder, decoder: decoder)
        #expect(throws: StorageError.self) { _ = try events.object(forKey: "e") }
        var migrator = StorageMigrator<Event>()
        migrator.registerMigration("iso8601 dates", from: Event.self, decoder: JSONDecoder()) { $0 }
        try migrator.migrate(events)
        #expect(try events.object(forKey: "e") == event)
    }
}
