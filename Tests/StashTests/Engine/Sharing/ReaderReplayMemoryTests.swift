import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A memory layer in front of a reader (``Follower``) puts in a value it read off the queue only if
/// the index still has the record it came from (``DiskEngine/ifCurrent(_:_:generation:_:)``): the
/// reader's catch-up that replays a writer process's appended records drops memory in the same hold
/// of the index's lock in which it applies them, so no value they supersede is put back meanwhile.
@Suite("A reader's memory layer beside its catch-up", .serialized)
struct ReaderReplayMemoryTests: DiskStoreScenario {
    @Test("a value a reader read off its queue, put into memory while its catch-up replays a writer's newer record of the key, is not kept once the catch-up is done")
    func valueReadBeforeReplayIsNotKept() throws {
        let directory = TemporaryDirectory()
        let writer = try DiskStore(directory: directory.storePath(), readOnly: false)
        defer { writer.close() }
        try Self.set(writer, "k", Data("1".utf8))
        let memory = RacingMemory()
        let engine = try DiskEngine.open(URL(fileURLWithPath: directory.storePath()), sharing: .follower) { memory }
        let read = try #require(try engine.readOffQueue("k", now: Self.now), "the reader did not read k off its queue")
        #expect(read.data == Data("1".utf8))
        try Self.set(writer, "k", Data("2".utf8)) // appended: the reader's next catch-up replays it
        // A reader thread that read "1" puts it into memory while the catch-up is under way (at the moment
        // it asks whether anything observes the store, between the two steps it had).
        let raced = Locked(false)
        memory.racing.withLock {
            $0 = {
                raced.withLock { $0 = true }
                engine.ifCurrent("k", read.record, generation: read.generation) { memory.keep("k", read.data) }
            }
        }
        engine.sync { _ in } // catches up
        memory.racing.withLock { $0 = nil }
        #expect(raced.withLock { $0 }, "the catch-up never asked whether anything observes the store: nothing raced it")
        #expect(memory.kept("k") != Data("1".utf8), "memory keeps the value the writer's record replaced")
        #expect(try engine.read("k", now: Self.now).data == Data("2".utf8))
    }
}

/// A memory layer of one map, whose `hasObservers` runs ``racing`` first: what another thread does
/// at that moment of the engine's work.
private final class RacingMemory: QuietEngineClient, @unchecked Sendable {
    // @unchecked Sendable: its state is behind locks.
    let racing = Locked<(() -> Void)?>(nil)
    private let values = Locked<[String: Data]>([:])

    func keep(_ key: String, _ value: Data) { values.withLock { $0[key] = value } }
    func kept(_ key: String) -> Data? { values.withLock { $0[key] } }

    var hasObservers: Bool {
        racing.withLock { $0 }?()
        return false
    }
    func dropFromMemory(_ keys: [String]?) {
        values.withLock { values in
            if let keys { for key in keys { values[key] = nil } } else { values = [:] }
        }
    }
    func dropFromMemory(key: String) { values.withLock { $0[key] = nil } }
}
