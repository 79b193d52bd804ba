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
        guard case .found(let before, _, _, _) = reader.readOffQueue("k", now: Self.now) else {
            Issue.record("the reader did not read k off its queue")
            return
        }
        #expect(before == Data("new".utf8))
        writer.log.publishStructure() // as a segment started or a compaction does: the reader opens anew

        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Thread {
            reader.log.offQueue[0].withLock { _ in
                held.signal()
                release.wait()
            }
        }
        holder.start()
        #expect(held.wait(timeout: TestDeadline.fromNow) == .success)
        let caughtUp = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            reader.sharing.beginOperation(reader) // the reader's queue catches up: it opens the store anew
            reader.sharing.endOperation(reader)
            caughtUp.signal()
        }
        // The catch-up has emptied the index and waits for the stripe held above.
        do {
            defer { release.signal() }
            try waitUntil { reader.withIndex { $0.count } == 0 }
            switch reader.readOffQueue("k", now: Self.now) {
            case .found(let data, _, _, _):
                #expect(data == Data("new".utf8), "a read off the queue took an older value from the index being rebuilt")
            case .missing:
                Issue.record("a read off the queue took k as missing from the index being rebuilt")
            case .unsure:
                break // read again on the queue, once the index is whole
            }
        }
        #expect(caughtUp.wait(timeout: TestDeadline.fromNow) == .success)
        guard case .found(let after, _, _, _) = reader.readOffQueue("k", now: Self.now) else {
            Issue.record("the reader did not read k off its queue once it had opened anew")
            return
        }
        #expect(after == Data("new".utf8))
    }
}
