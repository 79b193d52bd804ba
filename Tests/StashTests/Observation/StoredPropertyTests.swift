import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `StoredProperty`, the logic of the SwiftUI property wrapper `@Stored` (which is only a shell around
/// it): a non-optional value for a key, its default while none is stored, written through when set.
@Suite("The @Stored property's logic", .serialized) // the main actor, one test at a time
@MainActor
struct StoredPropertyTests {
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("shows the default while nothing is stored, writes through when set, and follows other writers")
    func defaultWriteThroughAndFollow() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<String>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: String.self))
        let name = StoredProperty("name", in: storage, default: "")
        #expect(name.value == "")
        #expect(try storage.objectIfPresent(forKey: "name") == nil, "the default is not stored")

        name.value = "Ada"
        #expect(name.value == "Ada")
        #expect(try storage.object(forKey: "name") == "Ada")

        try storage.setObject("Grace", forKey: "name") // another writer
        name.model.applyReceivedChanges()
        #expect(name.value == "Grace")
        try storage.removeObject(forKey: "name")
        name.model.applyReceivedChanges()
        #expect(name.value == "")
        #expect(name.error == nil)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
    @Test("a failed write leaves the value as the store has it and says why; an undecodable value shows the default")
    func failuresAreReported() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<String>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: String.self))
        try storage.transformData().setObject(Data("[1]".utf8), forKey: "name") // not a String
        let name = StoredProperty("name", in: storage, default: "none")
        #expect(name.value == "none")
        #expect((name.error as? StorageError)?.key == "name")

        var config = directory.diskConfig()
        config.readOnly = true
        let readOnly = try Storage<String>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: String.self))
        let shown = StoredProperty("title", in: readOnly, default: "untitled")
        shown.value = "Draft"
        #expect(shown.value == "untitled")
        #expect(shown.error as? StorageError == .readOnly(directory: readOnly.hybridStorage.diskStorage.path))
    }
}
