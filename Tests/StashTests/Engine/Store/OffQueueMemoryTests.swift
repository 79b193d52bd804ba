import Dispatch
import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// A `Storage` memory miss read off the store's queue (Docs/Architecture.md, "Reads off the queue")
/// puts what it read into memory only if the index still names the very record it read: a value a
/// write replaced meanwhile is never put back, whatever happened to the store's files in between.
@Suite("Reads off the queue and the memory layer")
struct OffQueueMemoryTests {
    /// The folder removed while a read decodes, and the store made anew at its path by the next
    /// write: the new store's first segment has the old one's number and its first record the old
    /// one's offset, so a check of the record's place alone takes the new record for the one read.
    @Test("a value read before the folder was removed is not put into memory over the value written into the new folder")
    func folderMadeAnewDuringDecode() throws {
        let directory = TemporaryDirectory()
        let gate = DecodeGate()
        let reader = try Storage<String>(diskConfig: directory.diskConfig(), transformer: gate.transformer)
        let writer = try Storage<String>(diskConfig: directory.diskConfig(), transformer: gate.transformer)
        try writer.setObject("one", forKey: "k") // into the writer's memory only
        let engine = reader.hybridStorage.engine
        let before = try #require(engine.record(forKey: "k"))

        let read = gate.holdingNextDecode { Result { try reader.object(forKey: "k") } }
        try FileManager.default.removeItem(atPath: directory.storePath())
        _ = try engine.sync { try $0.ensureActive(checkingNow: true) } // the folder is gone: the store opens its path anew
        try writer.setObject("two", forKey: "k")
        let after = try #require(engine.record(forKey: "k"))
        #expect(after.segment == before.segment && after.offset == before.offset, "the scenario needs the same place")

        #expect(try read.finish().get() == "one") // the read began before "two" was written
        #expect(try reader.object(forKey: "k") == "two", "the value the write replaced was put into memory")
    }

    /// The folder replaced by another store's (a backup restored, another process's store made at
    /// the path) and opened anew while readers run: the new index is built record by record, and a
    /// read off the queue meanwhile would find a key missing, or an older value of it that a later
    /// record of the new folder supersedes, and put that into memory for good.
    @Test("reads while the store opens a replaced folder anew see the old store or the new one, never a state in between")
    func readersWhileFolderReopens() throws {
        let directory = TemporaryDirectory()
        let transformer = Transformer<String>(toData: { Data($0.utf8) }, fromData: { String(decoding: $0, as: UTF8.self) })
        let padding = String(repeating: ".", count: 80)
        do { // another store, whose key went through many values: its replay reads every one
            let other = try Storage<String>(diskConfig: directory.diskConfig("other"), transformer: transformer)
            for version in 0..<20_000 { try other.setObject("old \(version)\(padding)", forKey: "k") }
            try other.setObject("new", forKey: "k")
        }
        let storage = try Storage<String>(diskConfig: directory.diskConfig(), transformer: transformer)
        try storage.setObject("first", forKey: "k")
        try FileManager.default.removeItem(atPath: directory.storePath())
        try FileManager.default.moveItem(atPath: directory.storePath("other"), toPath: directory.storePath())

        let reopened = Locked(false)
        let problems = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { thread in
            if thread == 0 {
                // The store finds its folder replaced and opens what stands at its path now.
                do { _ = try storage.hybridStorage.engine.sync { try $0.ensureActive(checkingNow: true) } } catch {
                    problems.withLock { $0.append("reopen: \(error)") }
                }
                reopened.withLock { $0 = true }
                return
            }
            var reads = 0
            while !reopened.withLock({ $0 }) || reads < 100 {
                reads += 1
                switch Result(catching: { try storage.object(forKey: "k") }) {
                case .success(let value) where value == "first" || value == "new": break
                case let other: problems.withLock { if $0.count < 5 { $0.append("read \(other)") } }
                }
            }
        }
        #expect(problems.withLock { $0 }.isEmpty)
        #expect(try storage.object(forKey: "k") == "new", "a value the new folder supersedes stayed in memory")
    }

    /// A `Storage` opened on a folder attaches its memory layer to the folder's engine, on the queue,
    /// while memory misses of another storage are read off the queue, each taking the memory layers'
    /// hits: the list of layers is read and changed under a lock of its own (ThreadSanitizer reports
    /// the race otherwise; `.ci/run` runs this suite under it).
    @Test("storages opened on a folder while another thread reads it off the queue")
    func attachWhileReadingOffQueue() throws {
        let directory = TemporaryDirectory()
        // A count limit of 1 and 8 keys read in turn: every read is a memory miss, read off the queue.
        let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 1),
                                        transformer: TransformerFactory.forData())
        for number in 0..<8 { try storage.setObject(Data([UInt8(number)]), forKey: "k\(number)") }
        let opened = Locked(false)
        let wrongReads = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 2) { thread in
            if thread == 0 {
                for _ in 0..<100 { _ = try? Storage<Data>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forData()) }
                opened.withLock { $0 = true }
            } else {
                var number = 0
                while !opened.withLock({ $0 }) {
                    if (try? storage.object(forKey: "k\(number % 8)")) != Data([UInt8(number % 8)]) { wrongReads.withLock { $0 += 1 } }
                    number += 1
                }
            }
        }
        #expect(wrongReads.withLock { $0 } == 0)
    }
}

/// A transformer for `String` whose next decode, once asked, waits until the test lets it go.
final class DecodeGate: @unchecked Sendable {
    // @unchecked Sendable: `armed` is touched under `lock`; the semaphores are thread-safe.
    private let lock = NSLock()
    private var armed = false
    private let decoding = DispatchSemaphore(value: 0)
    private let release = DispatchSemaphore(value: 0)

    var transformer: Transformer<String> {
        Transformer(toData: { Data($0.utf8) }, fromData: { [self] data in
            if takeArmed() {
                decoding.signal()
                release.wait()
            }
            return String(decoding: data, as: UTF8.self)
        })
    }

    private func takeArmed() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        defer { armed = false }
        return armed
    }

    /// Runs `body` on another thread and returns once its first decode is under way (and held).
    func holdingNextDecode<Value: Sendable>(_ body: @escaping @Sendable () -> Value) -> HeldRead<Value> {
        lock.lock()
        armed = true
        lock.unlock()
        let held = HeldRead<Value>(release: release)
        DispatchQueue.global().async { held.set(body()) }
        decoding.wait()
        return held
    }
}

/// A read held in its decode by a ``DecodeGate``: ``finish()`` lets it go and returns its result.
final class HeldRead<Value: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is written once before `done` is signalled and read after.
    private let release: DispatchSemaphore
    private let done = DispatchSemaphore(value: 0)
    private var value: Value?

    init(release: DispatchSemaphore) {
        self.release = release
    }

    func set(_ value: Value) {
        self.value = value
        done.signal()
    }

    func finish() -> Value {
        release.signal()
        done.wait()
        return value!
    }
}
