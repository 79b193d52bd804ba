import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A reader (``Follower``) opens its store anew when a writer process changed the store's files (a
/// segment started, a compaction, a `removeAll`): its index is emptied and rebuilt record by record
/// on its queue while reads off the queue go on. Such a read takes no answer from the index being
/// rebuilt (Contract item 11): a key not replayed yet is not missing, and a value a later record
/// supersedes is not the key's value.
///
/// The rebuild is held at a known point: a thread holds one stripe of the reads off the queue
/// (``SegmentLog/offQueue``), which the rebuild takes to set its table of segments right after it
/// emptied the index.
@Suite("A reader opening its store anew beside reads off its queue", .serialized)
struct ReaderRebuildTests: DiskStoreScenario {
    @Test("a read off a reader's queue while the reader rebuilds its index after a writer's change takes no answer from it: not missing, not an older value")
    func readOffQueueDuringRebuild() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        try Self.set(writer, "k", Data("old".utf8))
        try Self.set(writer, "k", Data("new".utf8))
        nonisolated(unsafe) let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        guard case .found(let before, _, _) = reader.readOffQueue("k", now: Self.now).read else {
            Issue.record("the reader did not read k off its queue")
            return
        }
        #expect(before == Data("new".utf8))
        writer.log.publishStructure() // as a segment started or a compaction does: the reader opens anew

        let caughtUp = DispatchSemaphore(value: 0)
        try holdingOffQueueStripe(of: reader.log) {
            DispatchQueue.global().async {
                reader.sharing.beginOperation(reader) // the reader's queue catches up: it opens the store anew
                reader.sharing.endOperation(reader)
                caughtUp.signal()
            }
            // The catch-up has emptied the index and waits for the stripe held above.
            try waitUntil { reader.withIndex { $0.count } == 0 }
            switch reader.readOffQueue("k", now: Self.now).read {
            case .found(let data, _, _):
                #expect(data == Data("new".utf8), "a read off the queue took an older value from the index being rebuilt")
            case .missing:
                Issue.record("a read off the queue took k as missing from the index being rebuilt")
            case .unsure:
                break // read again on the queue, once the index is whole
            }
        }
        #expect(caughtUp.wait(timeout: TestDeadline.fromNow) == .success)
        guard case .found(let after, _, _) = reader.readOffQueue("k", now: Self.now).read else {
            Issue.record("the reader did not read k off its queue once it had opened anew")
            return
        }
        #expect(after == Data("new".utf8))
    }

    @Test("existsObject in a reader, asked by a thread that found the reader current just before a writer's change, does not answer from the index the catch-up is rebuilding")
    func existsObjectDuringRebuild() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        for index in 0..<2_000 { try Self.set(writer, "filler\(index)", Data(repeating: 1, count: 40)) } // replayed before k
        try Self.set(writer, "k", Data("1".utf8))
        let storage = try DiskStorage(config: DiskConfig(name: "store", directory: directory.url, readOnly: true),
                                      transformer: TransformerFactory.forData())
        let engine = storage.engine
        #expect(storage.existsObject(forKey: "k"))
        writer.log.publishStructure() // the reader opens anew at its next operation

        let caughtUp = DispatchSemaphore(value: 0)
        let asked = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        let exists = Locked<Bool?>(nil)
        try holdingOffQueueStripe(of: engine.store.log) {
            DispatchQueue.global().async {
                engine.sync { _ in } // catches up: opens the store anew, and waits for the stripe held above
                caughtUp.signal()
            }
            try waitUntil { engine.store.withIndex { $0.count } == 0 }
            // What a thread that checked the shared file just before the writer's change found: current.
            let file = try #require(SharedState.openForReading(in: writer.log.folder.handle))
            let watch = try #require(engine.followWatch)
            watch.note(counter: file.counter, length: file.publishedLength, shared: file, seal: file.seal)
            DispatchQueue.global().async {
                asked.signal()
                exists.withLock { $0 = storage.existsObject(forKey: "k") }
                answered.signal()
            }
            #expect(asked.wait(timeout: TestDeadline.fromNow) == .success)
        }
        #expect(answered.wait(timeout: TestDeadline.fromNow) == .success)
        #expect(caughtUp.wait(timeout: TestDeadline.fromNow) == .success)
        #expect(exists.withLock { $0 } == true, "existsObject answered from the index being rebuilt")
        #expect(storage.existsObject(forKey: "k"))
    }

    /// Runs `body` while a thread holds the first stripe of `log`'s reads off the queue
    /// (``SegmentLog/offQueue``), which a rebuild takes right after it emptied the index: a catch-up
    /// started in `body` waits there until `body` returns or throws.
    private func holdingOffQueueStripe(of log: SegmentLog, sourceLocation: SourceLocation = #_sourceLocation,
                                       _ body: () throws -> Void) rethrows {
        let stripe = log.offQueue[0]
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            stripe.withLock { _ in
                held.signal()
                release.wait()
            }
        }
        holder.start()
        #expect(held.wait(timeout: TestDeadline.fromNow) == .success, sourceLocation: sourceLocation)
        defer { release.signal() }
        try body()
    }
}
