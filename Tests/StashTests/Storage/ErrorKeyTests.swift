import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `notFound`, `expired` and `decodingFailed` name the key on every read path that knows it, and
/// Cache 5's spellings of those cases still compile and match.
@Suite("Errors name the key")
struct ErrorKeyTests {
    /// A storage whose "late" key expired and whose "bad" key holds bytes that do not decode as `User`.
    private static func prepared(_ directory: TemporaryDirectory, clock: TestClock) throws -> Storage<User> {
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(User(name: "a", age: 1), forKey: "late", expiry: .seconds(5))
        try storage.transformData().setObject(Data(#"{"fullName":"Ada"}"#.utf8), forKey: "bad")
        clock.advance(by: 6)
        return storage
    }

    /// The key `error` names when it is an `expired`; nil otherwise.
    private static func expiredKey(_ error: (any Error)?) -> String? {
        if case .expired(_, let key)? = error as? StorageError { return key }
        return nil
    }

    /// The key `error` names when it is a `decodingFailed` whose cause is the decoder's; nil otherwise.
    private static func undecodableKey(_ error: (any Error)?) -> String? {
        if case .decodingFailed(let cause, let key)? = error as? StorageError, cause is DecodingError { return key }
        return nil
    }

    private static func caught(_ body: () throws -> Void) -> (any Error)? {
        do { try body() } catch { return error }
        return nil
    }

    @Test("Storage.object names the key of an expired value, from a memory hit and from disk")
    func storageExpired() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try Self.prepared(directory, clock: clock)
        #expect(Self.expiredKey(Self.caught { _ = try storage.object(forKey: "late") }) == "late") // memory hit
        let reopened = try makeUserStorage(in: directory, clock: clock) // an empty memory layer: from disk
        #expect(Self.expiredKey(Self.caught { _ = try reopened.object(forKey: "late") }) == "late")
        #expect(Self.expiredKey(Self.caught { _ = try storage.hybridStorage.diskStorage.object(forKey: "late") }) == "late")
    }

    @Test("MemoryStorage.object names the key of an expired value")
    func memoryExpired() throws {
        let clock = TestClock()
        let memory = MemoryStorage<Int>(config: MemoryConfig(), now: clock.function)
        try memory.setObject(1, forKey: "late", expiry: .seconds(5))
        clock.advance(by: 6)
        #expect(Self.expiredKey(Self.caught { _ = try memory.object(forKey: "late") }) == "late")
    }

    @Test("object, entry, objectIfPresent and object(default:) name the key whose bytes do not decode")
    func syncReadsUndecodable() throws {
        let directory = TemporaryDirectory()
        let storage = try Self.prepared(directory, clock: TestClock())
        #expect(Self.undecodableKey(Self.caught { _ = try storage.object(forKey: "bad") }) == "bad")
        #expect(Self.undecodableKey(Self.caught { _ = try storage.entry(forKey: "bad") }) == "bad")
        #expect(Self.undecodableKey(Self.caught { _ = try storage.objectIfPresent(forKey: "bad") }) == "bad")
        #expect(Self.undecodableKey(Self.caught { _ = try storage.object(forKey: "bad", default: User(name: "", age: 0)) }) == "bad")
        let disk = storage.hybridStorage.diskStorage
        #expect(Self.undecodableKey(Self.caught { _ = try disk.object(forKey: "bad") }) == "bad")
        #expect(Self.undecodableKey(Self.caught { _ = try disk.entry(forKey: "bad") }) == "bad")
    }

    @Test("async/await and completion reads name the key")
    func asyncReads() async throws {
        let directory = TemporaryDirectory()
        let storage = try Self.prepared(directory, clock: TestClock())
        var error: (any Error)?
        do { _ = try await storage.async.object(forKey: "late") } catch let thrown { error = thrown }
        #expect(Self.expiredKey(error) == "late")
        do { _ = try await storage.async.object(forKey: "bad") } catch let thrown { error = thrown }
        #expect(Self.undecodableKey(error) == "bad")
        do { _ = try await storage.async.entry(forKey: "bad") } catch let thrown { error = thrown }
        #expect(Self.undecodableKey(error) == "bad")
        let result = await withCheckedContinuation { continuation in
            storage.async.object(forKey: "bad") { continuation.resume(returning: $0) }
        }
        if case .failure(let thrown) = result { error = thrown } else { error = nil }
        #expect(Self.undecodableKey(error) == "bad")
    }

    @Test("update names the key whose bytes do not decode, and the missing key without a default")
    func updateNamesTheKey() throws {
        let directory = TemporaryDirectory()
        let storage = try Self.prepared(directory, clock: TestClock())
        #expect(Self.undecodableKey(Self.caught { try storage.update(forKey: "bad") { $0.age += 1 } }) == "bad")
        #expect(storageError { try storage.update(forKey: "none") { $0.age += 1 } }?.key == "none")
    }

    @Test("a transaction's reads name the key: expired, undecodable, missing")
    func transactionNamesTheKey() throws {
        let directory = TemporaryDirectory()
        let storage = try Self.prepared(directory, clock: TestClock())
        try storage.transaction { tx in
            #expect(Self.expiredKey(Self.caught { _ = try tx.object(forKey: "late") }) == "late")
            #expect(Self.undecodableKey(Self.caught { _ = try tx.object(forKey: "bad") }) == "bad")
            #expect(Self.undecodableKey(Self.caught { try tx.update(forKey: "bad") { $0.age += 1 } }) == "bad")
            #expect((Self.caught { _ = try tx.entry(forKey: "none") } as? StorageError)?.key == "none")
            try tx.removeObject(forKey: "late")
            #expect((Self.caught { _ = try tx.entry(forKey: "late") } as? StorageError)?.key == "late")
        }
    }

    @Test("a transformer's own decodingFailed gets the key; its other errors pass unchanged")
    func transformerErrorsGetTheKey() throws {
        struct Refused: Error, Equatable {}
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.transformData().setObject(Data("x".utf8), forKey: "k")
        let own = storage.transform(transformer: Transformer<Int>(toData: { _ in Data() },
                                                                  fromData: { _ in throw StorageError.decodingFailed(Refused()) }))
        let error = storageError { _ = try own.object(forKey: "k") }
        #expect(error?.key == "k")
        #expect(error == .decodingFailed(Refused()))
        let image = storage.transformImage()
        #expect(storageError { _ = try image.object(forKey: "k") }?.key == nil) // transformerFail names no key
    }

    @Test("texts name the key; errors compare without it; Cache 5's spellings compile and match")
    func textsAndCompatibility() throws {
        let date = Date(timeIntervalSince1970: 0)
        #expect(StorageError.expired(date, key: "k").description.contains("\"k\""))
        #expect(StorageError.decodingFailed(CocoaError(.coderReadCorrupt), key: "k").errorDescription?.contains("\"k\"") == true)
        #expect(StorageError.expired(date) == .expired(date, key: "k"))
        #expect(StorageError.expired(date) != .expired(date.addingTimeInterval(1), key: "k"))
        #expect(StorageError.expired(date).key == nil)
        #expect(StorageError.corrupted("x").key == nil)

        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try Self.prepared(directory, clock: clock)
        #expect(throws: StorageError.expired(clock.now.addingTimeInterval(-1))) { try storage.object(forKey: "late") }
        do {
            _ = try storage.object(forKey: "late")
            Issue.record("expected expired")
        } catch StorageError.expired { // Cache 5's catch clause
        }
        do {
            _ = try storage.object(forKey: "bad")
            Issue.record("expected decodingFailed")
        } catch StorageError.decodingFailed {
        }
    }
}
