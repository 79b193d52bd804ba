import Foundation
import Testing
import Stash
import StashTestSupport

/// Code written against the public `AsyncStorageAware` protocol (not a concrete type) has every
/// operation, with completion handlers and `async`, and keeps submission order: the protocol's
/// public face is the operations, how calls run is each storage's own (`runner`).
@Suite("Code generic over AsyncStorageAware")
struct AsyncStorageAwareTests {
    /// What an app's generic helper does: a write, then a read of it, then a removal, through the protocol alone.
    private func roundTrip<Store: AsyncStorageAware>(_ store: Store, key: String, value: Store.T) async throws -> Store.T {
        try await store.setObject(value, forKey: key, expiry: nil)
        let read = try await store.object(forKey: key)
        #expect(try await store.existsObject(forKey: key))
        #expect(try await !store.isExpiredObject(forKey: key))
        try await store.removeObject(forKey: key)
        #expect(try await !store.existsObject(forKey: key))
        return read
    }

    @Test("a generic helper over AsyncStorageAware writes, reads its own write and removes, through a Storage's async API")
    func genericHelperRoundTrips() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        #expect(try await roundTrip(storage.async, key: "n", value: 42) == 42)
    }

    @Test("a completion-handler write then an awaited read through the protocol: the read sees the write")
    func completionWriteThenAwaitedRead() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let store: any AsyncStorageAware<Int> = storage.async
        try storage.setObject(1, forKey: "n") // in memory: an awaited read could be answered at once
        store.setObject(2, forKey: "n", expiry: nil) { _ in }
        #expect(try await store.object(forKey: "n") == 2, "the read overtook the write submitted before it")
    }
}
