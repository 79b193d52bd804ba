import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// `ObservableValue.update(default:expiry:_:)`: read, change and write as one step, shown at once.

@Suite("Observable value updates")
@MainActor
struct ObservableValueUpdateTests {
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("update changes the stored value in place and value shows it when the call returns")
    func updateShowsAtOnce() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let counter = ObservableValue("n", in: storage)
        #expect(try counter.update(default: 0) { $0 += 1 } == 1)
        #expect(counter.value == 1)
        try counter.update { $0 += 41 }
        #expect(counter.value == 42)
        #expect(try storage.object(forKey: "n") == 42)
    }

    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // Observation
    @Test("an update whose body throws leaves value and the store as they were")
    func failingUpdateChangesNothing() throws {
        struct Refused: Error, Equatable {}
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObject(5, forKey: "n")
        let counter = ObservableValue("n", in: storage)
        #expect(throws: Refused()) { try counter.update { _ in throw Refused() } }
        #expect(counter.value == 5)
        #expect(throws: StorageError.notFound) { try ObservableValue("missing", in: storage).update { $0 += 1 } }
    }
}
