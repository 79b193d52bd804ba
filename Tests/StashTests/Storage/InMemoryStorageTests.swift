import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `Storage.inMemory`: the same API and observers, a store of its own, gone once released.
@Suite("In-memory storage")
struct InMemoryStorageTests {
    @Test("an in-memory store has the whole API: reads, writes, batches, prefix reads, expiry and observers")
    func sameAPI() throws {
        let clock = TestClock()
        let todos = try Storage<User>.inMemory(name: "Todos", now: clock.function)
        let heard = Recorder<StorageChange>()
        todos.addStorageObserver(heard) { heard, _, change in heard.append(change) }
        try todos.setObject(User(name: "Ada", age: 36), forKey: "a", expiry: .seconds(10))
        try todos.setObjects(["b": User(name: "Bob", age: 41)])
        #expect(try todos.objects(withPrefix: "").map(\.key) == ["a", "b"])
        clock.advance(by: 11)
        #expect(try todos.objectIfPresent(forKey: "a") == nil)
        #expect(heard.received == [.add(key: "a"), .add(key: "b")])
    }

    @Test("two in-memory stores never share values, even with one name")
    func storesAreSeparate() throws {
        let first = try Storage<User>.inMemory(name: "Todos")
        let second = try Storage<User>.inMemory(name: "Todos")
        try first.setObject(User(name: "Ada", age: 36), forKey: "me")
        #expect(try second.objectIfPresent(forKey: "me") == nil)
        #expect(first.path != second.path)
    }

    @Test("the memory folder goes once the storage and its views are released")
    func folderRemovedWhenReleased() throws {
        var path = ""
        do {
            let storage = try Storage<User>.inMemory()
            try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
            let view = storage.transformData()
            path = storage.path
            _ = consume storage
            #expect(MemoryVolume.hasFolder(path)) // the view still holds it
            #expect(try view.objectIfPresent(forKey: "me") != nil)
        }
        #expect(!MemoryVolume.hasFolder(path))
        #expect(!MemoryVolume.hasFolder(URL(fileURLWithPath: path).deletingLastPathComponent().path))
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("an ObservableValue on an in-memory store follows it, for previews")
    @MainActor
    func observableOnInMemory() throws {
        let storage = try Storage<User>.inMemory()
        let me = ObservableValue("me", in: storage, default: User(name: "", age: 0))
        me.value = User(name: "Ada", age: 36)
        #expect(try storage.object(forKey: "me") == User(name: "Ada", age: 36))
    }
}
