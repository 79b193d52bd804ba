import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// Reads off the store's queue (Contract item 4, "Reads in parallel"): readers on many threads
/// against a writer, compactions, a `removeAll` and the folder's removal, every answer checked
/// against what the writer had done before the read began and when it ended.
@Suite("Reads in parallel")
struct ParallelReadTests {
    /// Through `DiskStorage` alone (values in segments, or in files of their own), and through a
    /// `Storage` whose small memory layer makes most reads misses that put what they read into memory.
    @Test("readers on 8 threads against a writer, compactions, removeAll and a folder removal: every read is a value stored for its key during the read",
          arguments: [(false, false), (true, false), (false, true)])
    func readersAgainstWriter(valuesAsFiles: Bool, throughMemory: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.url.appendingPathComponent("store").path
        try withEngineThresholds(in: path, compactionMinimum: 8 << 10) {
            let disk = try openDataStore(path, valuesAsFiles: valuesAsFiles)
            let memory = MemoryStorage<Data>(config: MemoryConfig(countLimit: 8))
            let store: any StorageAware<Data> & Sendable = throughMemory ? Storage(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk)) : disk
            let history = WriteHistory()
            let problems = Problems()
            let keys = (0..<24).map { "key-\($0)" }
            let writes = 2_400
            let deadline = Date().addingTimeInterval(20) // bounded on a slow machine
            DispatchQueue.concurrentPerform(iterations: 9) { thread in
                if thread == 0 {
                    defer { history.finish() }
                    for step in 0..<writes where Date() < deadline {
                        let key = keys[step % 7 == 0 ? step % keys.count : step % 5] // a few hot keys, every key now and then
                        do {
                            switch step {
                            case 800:
                                history.destroy { try store.removeAll() }
                            case 1_600:
                                history.destroy(removingFolder: true) { try FileManager.default.removeItem(atPath: path) }
                            case _ where step % 97 == 0:
                                history.destroy(key) { try store.removeObject(forKey: key) }
                            default:
                                let version = history.begin(key)
                                try store.setObject(WriteHistory.value(key, version), forKey: key)
                                history.commit(key, version)
                            }
                        } catch {
                            problems.note("write \(step): \(error)")
                        }
                    }
                    return
                }
                var reads = 0
                while !history.isFinished || reads < 100 {
                    let key = keys[(thread * 7 + reads) % keys.count]
                    reads += 1
                    let before = history.snapshot(key)
                    let read = Result { try store.object(forKey: key) }
                    let after = history.snapshot(key)
                    problems.check(key, read, before: before, after: after)
                }
            }
            #expect(problems.list.isEmpty, "\(problems.list.prefix(5))")
            #expect(history.committedCount > 100)
            // No value that a write replaced was put back into memory by a read that overlapped it.
            for key in keys {
                let fromMemory = try? memory.object(forKey: key)
                #expect(fromMemory == nil || fromMemory == (try? disk.object(forKey: key)), "\(key)")
            }
        }
    }

    /// One key written over and over, another read beside it, and a memory layer of one entry: reads
    /// miss memory all the time and put what they read off the queue into memory while the writer
    /// replaces it. A value put back after its write would be read until the next write.
    @Test("a value read off the queue is never put into memory after a write replaced it")
    func noStaleValueInMemory() throws {
        let directory = TemporaryDirectory()
        let disk = try openDataStore(directory.url.appendingPathComponent("store").path)
        let memory = MemoryStorage<Data>(config: MemoryConfig(countLimit: 1))
        let storage = Storage(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk))
        let history = WriteHistory()
        let problems = Problems()
        let keys = ["a", "b"]
        let deadline = Date().addingTimeInterval(20)
        DispatchQueue.concurrentPerform(iterations: 5) { thread in
            if thread == 0 {
                defer { history.finish() }
                for step in 0..<4_000 where Date() < deadline {
                    let key = keys[step == 0 ? 1 : 0]
                    let version = history.begin(key)
                    do { try storage.setObject(WriteHistory.value(key, version), forKey: key) } catch { problems.note("\(error)") }
                    history.commit(key, version)
                    for _ in 0..<3 { // the writer reads its own write back, while readers may be putting in an older one
                        let before = history.snapshot(key)
                        problems.check(key, Result { try storage.object(forKey: key) }, before: before, after: history.snapshot(key))
                    }
                }
                return
            }
            var reads = 0
            while !history.isFinished || reads < 100 {
                let key = keys[(thread + reads) % 2]
                reads += 1
                let before = history.snapshot(key)
                let read = Result { try storage.object(forKey: key) }
                problems.check(key, read, before: before, after: history.snapshot(key))
            }
        }
        #expect(problems.list.isEmpty, "\(problems.list.prefix(5))")
    }

    /// A synchronous read answers without the queue only when no async mutation waits for it: the
    /// async write its caller submitted just before is seen (Contract item 4), from memory, from disk
    /// and from the index, through `Storage` and through `DiskStorage`.
    @Test("a synchronous read right after an async write that has not run yet returns what it wrote")
    func syncReadAfterPendingAsyncWrite() throws {
        let directory = TemporaryDirectory()
        let disk = try openDataStore(directory.url.appendingPathComponent("store").path)
        let storage = Storage(hybridStorage: HybridStorage(memoryStorage: MemoryStorage<Data>(config: MemoryConfig()), diskStorage: disk))
        let gate = DispatchSemaphore(value: 0)
        for round in 0..<20 {
            try storage.setObject(Data("old \(round)".utf8), forKey: "k") // in memory and on disk
            disk.engine.async { _ in gate.wait() } // the queue is busy: the writes below wait behind it
            storage.async.setObject(Data("new \(round)".utf8), forKey: "k") { _ in }
            storage.async.removeObject(forKey: "gone") { _ in }
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(round % 3)) { gate.signal() }
            #expect(try storage.object(forKey: "k") == Data("new \(round)".utf8))
            #expect(try disk.object(forKey: "k") == Data("new \(round)".utf8))
            #expect(try storage.existsObject(forKey: "gone") == false)
            try storage.setObject(Data("there".utf8), forKey: "gone")
        }
    }

    /// A read off the queue takes a key directory's entry by its key's hash alone and checks the key in
    /// the record it reads (``KeyDirectory/markUsedByHash(_:time:)``). Two keys of one hash cannot be
    /// found by brute force (64 bits, seeded), so the directory is made again with "a" under the hash of
    /// "b", before it: a lookup of "b" meets "a"'s entry first, whose record must not be the answer.
    @Test("a read off the queue that meets another key's entry under its key's hash answers with its own value")
    func entryOfAnotherKeyUnderTheSameHash() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path)
                try storage.setObject(Data("value of a".utf8), forKey: "a")
                try storage.setObject(Data("value of b".utf8), forKey: "b")
            } // closed: the key directory is written
            let file = path + "/" + StoreFolder.directoryName
            let written = try #require(try Damage.bytes(file).withUnsafeBytes { LoadedDirectory(copying: $0) })
            let header = written.header
            let entries = (0..<written.slotCount).filter(written.isOccupied).compactMap { slot in
                written.key(at: slot).flatMap { key in written.record(at: slot).map { (key, $0) } }
            }
            try #require(entries.map(\.0).sorted() == ["a", "b"])
            let hashOfB = KeyHash.of("b", seed: header.store)
            let salts = Dictionary(uniqueKeysWithValues: header.segments.map { ($0.id, $0.salt) })
            let crafted = DirectoryFormat.encode(position: header.position, store: header.store, segmentSalts: salts) { visit in
                for (key, record) in entries.sorted(by: { $0.0 < $1.0 }) { // "a" first: it takes the hash's home slot
                    var (key, record) = (key, record)
                    record.keyHash = hashOfB
                    key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
                }
            }
            defer { crafted.deallocate() }
            try Data(UnsafeRawBufferPointer(crafted)).write(to: URL(fileURLWithPath: file))
            let storage = try openDataStore(path)
            try #require(storage.engine.store.withIndex { $0.base != nil }, "the store opened with the crafted directory")
            #expect(try storage.object(forKey: "b") == Data("value of b".utf8))
            #expect(storage.recoveryIssues.isEmpty)
        }
    }
}

/// What the writer began and finished, per key, and how many operations that may lose values began.
private final class WriteHistory: @unchecked Sendable {
    // @unchecked Sendable: every field is touched under `lock`.
    private let lock = NSLock()
    private var started: [String: Int] = [:]
    private var committed: [String: Int] = [:]
    private var losses = 0
    private var folderRemoved = false
    private var finished = false
    private var nextVersion = 0
    private(set) var committedCount = 0

    struct Snapshot {
        var started: Int?
        var committed: Int?
        var losses: Int
        var folderRemoved: Bool
    }

    static func value(_ key: String, _ version: Int) -> Data {
        Data("\(key)#\(version)#".utf8) + Data(repeating: UInt8(version & 0x7F), count: 90)
    }

    func begin(_ key: String) -> Int {
        locked {
            nextVersion += 1
            started[key] = nextVersion
            return nextVersion
        }
    }

    func commit(_ key: String, _ version: Int) {
        locked {
            committed[key] = version
            committedCount += 1
        }
    }

    /// Runs an operation that removes `key` (every key when nil), counted as begun before it runs.
    func destroy(_ key: String? = nil, removingFolder: Bool = false, _ operation: () throws -> Void) {
        locked {
            losses += 1
            folderRemoved = folderRemoved || removingFolder
            if let key { committed[key] = nil } else { committed = [:] }
        }
        try? operation()
    }

    func snapshot(_ key: String) -> Snapshot {
        locked { Snapshot(started: started[key], committed: committed[key], losses: losses, folderRemoved: folderRemoved) }
    }

    func finish() { locked { finished = true } }
    var isFinished: Bool { locked { finished } }

    private func locked<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }
}

/// Answers that no moment of the read can explain.
private final class Problems: @unchecked Sendable {
    // @unchecked Sendable: `found` is touched under `lock`.
    private let lock = NSLock()
    private var found: [String] = []

    var list: [String] {
        lock.lock()
        defer { lock.unlock() }
        return found
    }

    func note(_ problem: String) {
        lock.lock()
        found.append(problem)
        lock.unlock()
    }

    /// A value must be one written for `key` (never another key's bytes), begun by the read's end,
    /// and not older than the last one written before the read began, unless values were lost meanwhile.
    /// Once the folder was removed under the store, a read may also fail as `corrupted` (its files
    /// are gone; the store finds out at its next write, or at the read itself).
    func check(_ key: String, _ read: Result<Data, any Error>, before: WriteHistory.Snapshot, after: WriteHistory.Snapshot) {
        let lossesMeanwhile = after.losses != before.losses
        switch read {
        case .success(let data):
            let parts = String(decoding: data.prefix(40), as: UTF8.self).split(separator: "#")
            guard parts.count >= 2, parts[0] == key, let version = Int(parts[1]),
                  data == WriteHistory.value(key, version) else {
                return note("\(key): bytes that are no value of it: \(data.prefix(24))")
            }
            if let started = after.started, version > started { note("\(key): version \(version) read, only \(started) begun") }
            if let committed = before.committed, version < committed, !lossesMeanwhile {
                note("\(key): version \(version) read after \(committed) was written")
            }
        case .failure(let error):
            if case StorageError.corrupted = error, after.folderRemoved { return }
            guard case StorageError.notFound = error else { return note("\(key): \(error)") }
            if before.committed != nil, !lossesMeanwhile { note("\(key): not found after version \(before.committed!) was written") }
        }
    }
}
