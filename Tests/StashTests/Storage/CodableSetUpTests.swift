import Foundation
import Testing
import Stash

/// `Storage<T>(name:)`, the one-line set-up for Codable values.
@Suite("One-line Codable set-up")
struct CodableSetUpTests {
    private struct Todo: Codable, Sendable, Equatable { var title: String; var done: Bool }

    @Test("Storage(name:) stores Codable values as JSON, with no expiry and the standard memory limits")
    func defaults() throws {
        let directory = TemporaryDirectory()
        let todos = try Storage<[Todo]>(name: "Todos", directory: directory.url)
        try todos.setObject([Todo(title: "Milk", done: false)], forKey: "inbox")
        #expect(try todos.object(forKey: "inbox") == [Todo(title: "Milk", done: false)])
        #expect(try todos.entry(forKey: "inbox").expiry == .never)
        let json = try todos.transformData().object(forKey: "inbox")
        #expect(try JSONDecoder().decode([Todo].self, from: json) == [Todo(title: "Milk", done: false)])
        #expect(todos.path == directory.url.appendingPathComponent("Todos").path)
        #expect(MemoryConfig.standard.countLimit == 1_000 && MemoryConfig.standard.totalCostLimit == 20_000_000)
    }

    @Test("the default folder is the caches folder, as DiskConfig's")
    func defaultFolder() {
        #expect(DiskConfig(name: "Todos").storeURL.path == DiskConfig.cachesDirectory.appendingPathComponent("Todos").path)
    }

    @Test("expiry, maxSize and the clock are honoured")
    func options() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let todos = try Storage<Todo>(name: "Todos", expiry: .seconds(60), maxSize: 1_000, directory: directory.url,
                                      now: clock.function)
        try todos.setObject(Todo(title: "Milk", done: false), forKey: "a")
        clock.advance(by: 61)
        #expect(throws: StorageError.expired(clock.now.addingTimeInterval(-1))) { try todos.object(forKey: "a") }
        #expect(throws: StorageError.self) {
            try todos.setObject(Todo(title: String(repeating: "x", count: 2_000), done: false), forKey: "big")
        }
    }

    @Test("the one-line and the Cache 5 initializers open the same store")
    func sameStoreAsCache5() throws {
        let directory = TemporaryDirectory()
        let short = try Storage<Todo>(name: "Todos", directory: directory.url)
        let long = try Storage<Todo>(diskConfig: DiskConfig(name: "Todos", directory: directory.url),
                                     transformer: TransformerFactory.forCodable(ofType: Todo.self))
        try short.setObject(Todo(title: "Milk", done: true), forKey: "a")
        #expect(try long.object(forKey: "a") == Todo(title: "Milk", done: true))
    }
}
