import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Batches (`StorageBatch`, `setObjects`, `removeObjects`): all or none, one commit, in order.

@Suite("Batches: all or none, with one commit")
struct BatchTests {
    @Test("a batch applies every change in order: sets, removals, a key changed twice, values in files")
    func appliesEveryChange() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "old", age: 1), forKey: "gone")
        var batch = StorageBatch<User>()
        batch.setObject(User(name: "a", age: 1), forKey: "a")
        batch.setObject(User(name: "b", age: 2), forKey: "b")
        batch.removeObject(forKey: "gone")
        batch.setObject(User(name: "first", age: 3), forKey: "twice")
        batch.setObject(User(name: String(repeating: "x", count: ValueFiles.threshold), age: 4), forKey: "large")
        batch.setObject(User(name: "second", age: 5), forKey: "twice")
        try storage.write(batch)
        #expect(try storage.object(forKey: "a") == User(name: "a", age: 1))
        #expect(try storage.object(forKey: "twice") == User(name: "second", age: 5))
        #expect(storageError { _ = try storage.object(forKey: "gone") }?.isNotFound == true)
        #expect(try storage.entry(forKey: "large").filePath != nil)
        #expect(Set(storage.allKeys) == ["a", "b", "twice", "large"])
        let reopened = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: User.self))
        #expect(try reopened.object(forKey: "twice") == User(name: "second", age: 5))
        #expect(try reopened.object(forKey: "large").age == 4)
        #expect(Set(reopened.allKeys) == ["a", "b", "twice", "large"])
    }

    @Test("a batch of 100 values is one append, and one fsync when durable")
    func oneCommit() throws {
        let directory = TemporaryDirectory()
        let disk = try DiskStorage(config: DiskConfig(name: "store", directory: directory.url, durable: true),
                                   transformer: TransformerFactory.forData())
        try disk.setObject(Data("warm".utf8), forKey: "warm")
        let before = disk.engine.sync { ($0.log.appendCount, $0.log.groupCommit.syncCount) }
        try disk.setObjects(Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", Data(repeating: UInt8($0), count: 200)) }))
        let after = disk.engine.sync { ($0.log.appendCount, $0.log.groupCommit.syncCount) }
        #expect(after.0 - before.0 == 1, "appends")
        #expect(after.1 - before.1 == 1, "fsyncs")
        #expect(disk.allKeys.count == 101)
        try disk.removeObjects(forKeys: (0..<50).map { "k\($0)" })
        #expect(disk.engine.sync { $0.log.appendCount } - after.0 == 1)
        #expect(disk.allKeys.count == 51)
    }

    @Test("observers hear each change of a batch, in order, before write returns; memory serves the values")
    func observedAndRemembered() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        let heard = Recorder<String>()
        let token = storage.addStorageObserver(heard) { recorder, _, change in recorder.append("\(change)") }
        try storage.setObjects(["k": User(name: "k", age: 1)])
        var batch = StorageBatch<User>()
        batch.setObject(User(name: "x", age: 2), forKey: "x")
        batch.removeObject(forKey: "k")
        try storage.write(batch)
        #expect(heard.received.count == 3, "\(heard.received)")
        #expect(storage.hybridStorage.memoryEntry(forKey: "x")?.object == User(name: "x", age: 2))
        token.cancel()
    }

    @Test("a batch that cannot be encoded applies nothing")
    func failingEncodeAppliesNothing() throws {
        let directory = TemporaryDirectory()
        let failing = Transformer<Int>(toData: { value in
            if value < 0 { throw StorageError.encodingFailed(CocoaError(.coderInvalidValue)) }
            return Data("\(value)".utf8)
        }, fromData: { Int(String(decoding: $0, as: UTF8.self)) ?? 0 })
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: failing)
        var batch = StorageBatch<Int>()
        batch.setObject(1, forKey: "a")
        batch.setObject(-1, forKey: "b")
        #expect(throws: (any Error).self) { try disk.write(batch) }
        #expect(disk.allKeys.isEmpty)
    }

    @Test("a batch cut short at any byte is applied not at all, and the store takes writes after it")
    func tornBatchIsDropped() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var full = 0
        var start = 0
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            _ = try store.writer.write("before", Data("b".utf8), expiry: .distantFuture, now: now, maxSize: 0, durable: false)
            start = store.log.active!.length
            _ = try store.writer.writeBatch((0..<5).map { .set(key: "k\($0)", data: Data(repeating: UInt8($0), count: 40), expiry: .distantFuture) },
                                     now: now, maxSize: 0, durable: false)
            full = store.log.active!.length
            store.close()
        }
        let segment = path + "/" + (try #require(try StoreFiles(path).segments.last))
        let whole = try Damage.bytes(segment)
        for cut in stride(from: start + 1, to: full, by: 7) {
            try Damage.write(Array(whole[0..<cut]), to: segment)
            let store = try DiskStore(directory: path, readOnly: false)
            #expect(try store.read("before", now: now).data == Data("b".utf8))
            #expect(store.keys == ["before"], "cut at \(cut): part of the batch was applied")
            // Appends after the cut-off batch are never read as its rest.
            _ = try store.writer.write("after", Data("a".utf8), expiry: .distantFuture, now: now, maxSize: 0, durable: false)
            store.close()
            let again = try DiskStore(directory: path, readOnly: true)
            #expect(Set(again.keys) == ["before", "after"], "cut at \(cut)")
            again.close()
            try Damage.write(whole, to: segment)
        }
    }

    @Test("a flipped byte inside a batch drops that batch whole, and nothing else")
    func damagedBatchIsDropped() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var range = 0..<0
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            let start = store.log.active!.length
            _ = try store.writer.writeBatch((0..<5).map { .set(key: "k\($0)", data: Data(repeating: 1, count: 40), expiry: .distantFuture) },
                                     now: now, maxSize: 0, durable: false)
            range = start..<store.log.active!.length
            _ = try store.writer.write("after", Data("a".utf8), expiry: .distantFuture, now: now, maxSize: 0, durable: false)
            store.close()
        }
        let segment = path + "/" + (try #require(try StoreFiles(path).segments.last))
        try Damage.flip(segment, at: range.lowerBound + range.count / 2)
        let store = try DiskStore(directory: path, readOnly: true)
        #expect(store.keys == ["after"])
        #expect(store.recoveryIssues.contains { "\($0)".contains("batch") }, "\(store.recoveryIssues)")
    }

    @Test("the async API applies a batch in order with other calls")
    func asyncBatch() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        var batch = StorageBatch<User>()
        batch.setObject(User(name: "a", age: 1), forKey: "a")
        storage.async.setObject(User(name: "z", age: 0), forKey: "a") { _ in }
        try await storage.async.write(batch)
        #expect(try await storage.async.object(forKey: "a") == User(name: "a", age: 1))
    }
}
