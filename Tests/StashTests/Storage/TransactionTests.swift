import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// `transaction { tx in … }`: several keys read and written as one step, committed as one batch.

@Suite("Transactions: several keys, all or none, isolated")
struct TransactionTests {
    @Test("reads see the transaction's own writes and removals; the commit applies them all")
    func readsSeeOwnWrites() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObjects(["a": 10, "b": 0, "gone": 1])
        let seen = try storage.transaction { tx -> [Int?] in
            let a = try tx.object(forKey: "a")
            try tx.setObject(a - 3, forKey: "a")
            try tx.update(forKey: "b", default: 0) { $0 += 3 }
            try tx.removeObject(forKey: "gone")
            try tx.setObject(7, forKey: "new")
            return [try tx.object(forKey: "a"), try tx.object(forKey: "b"), try? tx.object(forKey: "gone"),
                    try tx.existsObject(forKey: "new") ? 1 : 0]
        }
        #expect(seen == [7, 3, nil, 1])
        #expect(try storage.object(forKey: "a") == 7)
        #expect(try storage.object(forKey: "b") == 3)
        #expect(try storage.object(forKey: "new") == 7)
        #expect(storageError { _ = try storage.object(forKey: "gone") } == .notFound)
        #expect(storage.hybridStorage.memoryEntry(forKey: "new")?.object == 7)
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        #expect(Set(reopened.allKeys) == ["a", "b", "new"])
    }

    @Test("a body that throws writes nothing; one that reads only writes nothing either")
    func throwingBodyWritesNothing() throws {
        struct Refused: Error, Equatable {}
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try disk.setObject(1, forKey: "a")
        let appends = disk.engine.sync { $0.log.appendCount }
        #expect(throws: Refused()) {
            try disk.transaction { tx in
                try tx.setObject(2, forKey: "a")
                try tx.setObject(3, forKey: "b")
                throw Refused()
            }
        }
        #expect(try disk.transaction { tx in try tx.object(forKey: "a") } == 1)
        #expect(try disk.object(forKey: "a") == 1)
        #expect(disk.allKeys == ["a"])
        #expect(disk.engine.sync { $0.log.appendCount } == appends)
    }

    @Test("a transaction is one append, and one fsync when durable")
    func oneCommit() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: DiskConfig(name: "store", directory: directory.url, durable: true),
                                   transformer: TransformerFactory.forCodable(ofType: Int.self))
        try disk.setObject(0, forKey: "warm")
        let before = disk.engine.sync { ($0.log.appendCount, $0.log.groupCommit.syncCount) }
        try disk.transaction { tx in
            for index in 0..<100 { try tx.setObject(index, forKey: "k\(index)") }
        }
        let after = disk.engine.sync { ($0.log.appendCount, $0.log.groupCommit.syncCount) }
        #expect(after.0 - before.0 == 1)
        #expect(after.1 - before.1 == 1)
        #expect(disk.allKeys.count == 101)
    }

    @Test("observers hear each change in order once committed, with the before each replaced")
    func observersHearEachChange() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObject(1, forKey: "k")
        let heard = Recorder<KeyChange<Int>>()
        let token = storage.addObserver(heard, forKey: "k") { recorder, _, change in recorder.append(change) }
        try storage.transaction { tx in
            try tx.update(forKey: "k") { $0 += 1 }
            #expect(heard.received.isEmpty, "nothing is heard before the commit")
            try tx.update(forKey: "k") { $0 += 1 }
            try tx.removeObject(forKey: "k")
            try tx.setObject(9, forKey: "k")
        }
        #expect(heard.received == [.edit(before: 1, after: 2), .edit(before: 2, after: 3), .remove, .edit(before: nil, after: 9)])
        token.cancel()
    }

    @Test("expired values read as expired in a transaction, and update treats them as missing")
    func expiryInsideTransactions() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self),
                                       now: clock.function)
        try storage.setObject(5, forKey: "k", expiry: .seconds(1))
        clock.advance(by: 2)
        try storage.transaction { tx throws in
            #expect(storageError { _ = try tx.object(forKey: "k") }?.isExpired == true)
            #expect(try tx.entry(forKey: "k").isExpired)
            #expect(try !tx.existsObject(forKey: "k"))
            #expect(try tx.update(forKey: "k", default: 100) { $0 += 1 } == 101)
        }
        #expect(try storage.object(forKey: "k") == 101)
    }

    @Test("async/await and completion-handler transactions commit and return the body's result")
    func asyncTransactions() async throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let sum = try await storage.async.transaction { tx in
            try tx.setObject(1, forKey: "a")
            try tx.setObject(2, forKey: "b")
            return try tx.object(forKey: "a") + tx.object(forKey: "b")
        }
        #expect(sum == 3)
        let result = await withCheckedContinuation { continuation in
            storage.async.transaction({ tx in try tx.update(forKey: "a") { $0 += 10 } }) { continuation.resume(returning: $0) }
        }
        #expect(try result.get() == 11)
        #expect(try storage.object(forKey: "a") == 11)
    }

    @Test("canonically equivalent spellings are one key inside a transaction and after its commit")
    func equivalentSpellings() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.transaction { tx in
            try tx.setObject(1, forKey: "caf\u{E9}")
            #expect(try tx.object(forKey: "cafe\u{301}") == 1)
            try tx.update(forKey: "cafe\u{301}") { $0 += 1 }
            try tx.removeObject(forKey: "Hangul \u{1100}\u{1161}")
            try tx.setObject(7, forKey: "Hangul \u{AC00}")
        }
        #expect(try storage.object(forKey: "caf\u{E9}") == 2)
        #expect(try storage.object(forKey: "Hangul \u{1100}\u{1161}") == 7)
        #expect(storage.allKeys.count == 2)
    }

    @Test("a value too large for maxSize fails the commit and writes nothing of the transaction")
    func failingCommitWritesNothing() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: directory.diskConfig(maxSize: 1_000), transformer: TransformerFactory.forData())
        #expect(throws: StorageError.valueTooLarge(size: 2_000, maxSize: 1_000)) {
            try disk.transaction { tx in
                try tx.setObject(Data(count: 10), forKey: "small")
                try tx.setObject(Data(count: 2_000), forKey: "large")
            }
        }
        #expect(disk.allKeys.isEmpty)
    }
}

@Suite("Transactions and updates refuse calls on their own store from inside")
struct TransactionReentrancyTests {
    @Test("every throwing call on the store from inside a body throws reentrantCall and writes nothing")
    func callsOnTheStoreThrow() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let view = storage.transformData()
        let other = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try storage.setObject(1, forKey: "k")
        let expected = StorageError.reentrantCall(directory: storage.path)
        let calls: [(String, () throws -> Void)] = [
            ("object", { _ = try storage.object(forKey: "k") }),
            ("entry", { _ = try storage.entry(forKey: "k") }),
            ("existsObject", { _ = try storage.existsObject(forKey: "k") }),
            ("setObject", { try storage.setObject(2, forKey: "k") }),
            ("removeObject", { try storage.removeObject(forKey: "k") }),
            ("removeAll", { try storage.removeAll() }),
            ("write", { try storage.setObjects(["x": 1]) }),
            ("nested update", { try storage.update(forKey: "k") { $0 += 1 } }),
            ("nested transaction", { try storage.transaction { tx in try tx.setObject(3, forKey: "k") } }),
            ("view", { try view.setObject(Data("1".utf8), forKey: "k") }),
            ("other storage of the folder", { _ = try other.object(forKey: "k") }),
            ("other storage's update", { try other.update(forKey: "k") { $0 += 1 } }),
        ]
        for (name, call) in calls {
            try storage.update(forKey: "k") { value in
                #expect(throws: expected, "\(name) in update") { try call() }
                value += 1
            }
            try storage.transaction { tx in
                #expect(throws: expected, "\(name) in transaction") { try call() }
                try tx.update(forKey: "k") { $0 += 1 }
            }
        }
        #expect(try storage.object(forKey: "k") == 1 + 2 * calls.count)
        #expect(storage.allKeys == ["k"])
    }

    @Test("a transaction used after its body returned throws transactionEnded")
    func escapedTransactionThrows() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let kept = try storage.transaction { tx in tx }
        #expect(throws: StorageError.transactionEnded) { try kept.setObject(1, forKey: "k") }
        #expect(throws: StorageError.transactionEnded) { _ = try kept.object(forKey: "k") }
        #expect(storage.allKeys.isEmpty)
    }

    @Test("another store may be used from inside a body, and the store again once it returned")
    func otherStoresAndAfterwards() throws {
        let directory = TemporaryDirectory()
        let first = try Storage<Int>(diskConfig: directory.diskConfig("first"), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let second = try Storage<Int>(diskConfig: directory.diskConfig("second"), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try first.transaction { tx in
            try second.update(forKey: "n", default: 0) { value in
                value += 1
                #expect(throws: StorageError.reentrantCall(directory: first.path)) { _ = try first.object(forKey: "n") }
            }
            try tx.setObject(1, forKey: "n")
        }
        #expect(try first.object(forKey: "n") == 1)
        #expect(try second.object(forKey: "n") == 1)
        try first.setObject(2, forKey: "n")
    }

    @Test("a completion-handler call made inside a body runs after the commit")
    func asyncCallsRunAfter() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let done = DispatchSemaphore(value: 0)
        let seen = Recorder<Int>()
        try storage.transaction { tx in
            try tx.setObject(1, forKey: "k")
            storage.async.object(forKey: "k") { result in
                if let value = try? result.get() { seen.append(value) }
                done.signal()
            }
        }
        done.wait()
        #expect(seen.received == [1])
    }
}
