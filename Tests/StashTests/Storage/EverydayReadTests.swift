import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The everyday reads: the value or nil, the value or a default, and a prefix's rows in one call.
@Suite("Everyday reads")
struct EverydayReadTests {
    // MARK: objectIfPresent and object(forKey:default:)

    @Test("objectIfPresent is nil for a missing or expired value and the value otherwise")
    func objectIfPresent() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        #expect(try storage.objectIfPresent(forKey: "me") == nil)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me", expiry: .seconds(60))
        #expect(try storage.objectIfPresent(forKey: "me") == User(name: "Ada", age: 36))
        clock.advance(by: 61)
        #expect(try storage.objectIfPresent(forKey: "me") == nil)
        #expect(try storage.object(forKey: "me", default: User(name: "", age: 0)) == User(name: "", age: 0))
        #expect(try storage.entry(forKey: "me").object == User(name: "Ada", age: 36)) // still there, expired
    }

    @Test("objectIfPresent and object(forKey:default:) throw real errors: a value that does not decode")
    func readsThrowDecodingFailures() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.transformData().setObject(Data("not json".utf8), forKey: "me")
        #expect(throws: StorageError.self) { try storage.objectIfPresent(forKey: "me") }
        #expect(throws: StorageError.self) { try storage.object(forKey: "me", default: User(name: "", age: 0)) }
    }

    @Test("the async reads answer as the synchronous ones, through async/await and completion handlers")
    func asyncReads() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        #expect(try await storage.async.objectIfPresent(forKey: "me") == nil)
        #expect(try await storage.async.object(forKey: "me", default: User(name: "x", age: 1)) == User(name: "x", age: 1))
        try await storage.async.setObject(User(name: "Ada", age: 36), forKey: "me")
        #expect(try await storage.async.objectIfPresent(forKey: "me") == User(name: "Ada", age: 36))
        let viaCompletion: User? = try await withCheckedThrowingContinuation { continuation in
            storage.async.objectIfPresent(forKey: "missing") { continuation.resume(with: $0) }
        }
        #expect(viaCompletion == nil)
    }

    // MARK: objects(withPrefix:)

    @Test("objects(withPrefix:) returns the prefix's keys and values in key order, in one call")
    func objectsInKeyOrder() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        for number in [3, 10, 1, 2] { try storage.setObject(User(name: "n", age: number), forKey: "todo.\(number)") }
        try storage.setObject(User(name: "other", age: 0), forKey: "note.1")
        let rows = try storage.objects(withPrefix: "todo.")
        #expect(rows.map(\.key) == ["todo.1", "todo.10", "todo.2", "todo.3"])
        #expect(rows.map(\.value.age) == [1, 10, 2, 3])
        #expect(try storage.objects(withPrefix: "").count == 5)
        #expect(try storage.objects(withPrefix: "none.").isEmpty)
        let viaAsync = try await storage.async.objects(withPrefix: "todo.")
        #expect(viaAsync.map(\.key) == rows.map(\.key))
        let viaCompletion = try await withCheckedThrowingContinuation { continuation in
            storage.async.objects(withPrefix: "todo.") { result in continuation.resume(with: result.map { $0.map(\.key) }) }
        }
        #expect(viaCompletion == rows.map(\.key))
    }

    @Test("objects(withPrefix:) leaves expired values out, as objectIfPresent answers nil for them")
    func objectsLeaveExpiredOut() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(User(name: "soon", age: 1), forKey: "k.soon", expiry: .seconds(10))
        try storage.setObject(User(name: "kept", age: 2), forKey: "k.kept")
        clock.advance(by: 11)
        #expect(try storage.objects(withPrefix: "k.").map(\.key) == ["k.kept"])
    }

    @Test("objects(withPrefix:) throws decodingFailed naming the key whose value does not decode")
    func objectsNameUndecodableKey() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "Ada", age: 36), forKey: "team.ada")
        try storage.transformData().setObject(Data(#"{"fullName":"Bob"}"#.utf8), forKey: "team.bob")
        let error = storageError { _ = try storage.objects(withPrefix: "team.") }
        guard case .decodingFailed(let cause, let key)? = error else {
            Issue.record("expected decodingFailed, got \(String(describing: error))")
            return
        }
        #expect(key == "team.bob")
        #expect(cause is DecodingError)
        #expect("\(error!)".contains("team.bob"))
    }

    @Test("objects(withPrefix:) matches keys by canonical equivalence, as allKeys(withPrefix:)")
    func objectsMatchCanonically() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "nfd", age: 1), forKey: "cafe\u{301}.1")
        #expect(try storage.objects(withPrefix: "caf\u{E9}.").map(\.value.name) == ["nfd"])
        #expect(Set(try storage.objects(withPrefix: "caf\u{E9}.").map(\.key)) == Set(storage.allKeys(withPrefix: "caf\u{E9}.")))
    }
}

/// `objects(withPrefix:)` beside a writer thread (a suite ThreadSanitizer runs).
@Suite("Prefix reads beside writers")
struct PrefixReadConcurrencyTests {
    @Test("objects(withPrefix:) reads a batch's keys as one state while another thread writes batches",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func objectsSeeBatchesWhole() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let keys = (0..<10).map { "p.\($0)" }
        let finished = Locked(false)
        let writer = Task.detached {
            defer { finished.withLock { $0 = true } }
            for number in 1...300 {
                var batch = StorageBatch<User>()
                for key in keys { batch.setObject(User(name: "p", age: number), forKey: key) }
                try storage.write(batch)
            }
        }
        var mixed = 0
        while !finished.withLock({ $0 }) {
            let ages = Set(try storage.objects(withPrefix: "p.").map(\.value.age))
            if ages.count > 1 { mixed += 1 }
            await Task.yield()
        }
        try await writer.value
        #expect(mixed == 0)
    }
}
