import Foundation
import Testing
import StashTestSupport
@testable import StashEngine

/// What a reader's catch-up drops from the memory in front of it: the keys another process's records
/// change, in the same hold of the index's lock in which the index changes (a value read off the queue
/// before the catch-up is then never put back after it), and nothing for the access records a writer's
/// reads append (else a reader's memory would empty whenever its writer reads).
@Suite("Readers in other processes: what a catch-up drops from memory", .serialized)
struct ReaderMemoryTests: DiskStoreScenario {
    @Test("a reader's catch-up over another process's reads drops nothing from memory; over its writes, their keys only, in the index's hold")
    func catchUpDropsChangedKeysOnly() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        try Self.set(writer, "a", Data("1".utf8))
        try Self.set(writer, "b", Data("2".utf8))
        let memory = MemoryDrops()
        let reader = try DiskStore(directory: path, sharing: .follower, client: memory)
        defer { reader.close() }
        #expect(try Self.get(reader, "a") == Data("1".utf8))

        // The writer reads: its access records are appended and published.
        for _ in 0..<3 { _ = try Self.get(writer, "a"); _ = try Self.get(writer, "b") }
        try writer.log.flushAccesses()
        let lengthBefore = Self.segmentBytes(reader)
        #expect(reader.catchUp(), "the reader did not see the writer's access records")
        #expect(Self.segmentBytes(reader) > lengthBefore)
        #expect(memory.drops.isEmpty, "a catch-up over access records dropped memory: \(memory.drops)")

        try Self.set(writer, "b", Data("3".utf8))
        #expect(reader.catchUp())
        #expect(memory.drops.map(\.keys) == [["b"]])
        #expect(memory.drops.allSatisfy { $0.inIndexHold }, "memory was dropped outside the index's hold")
        #expect(try Self.get(reader, "b") == Data("3".utf8))
    }

    /// How many bytes of its segments `store` has read.
    private static func segmentBytes(_ store: DiskStore) -> Int {
        store.log.segments.values.reduce(0) { $0 + $1.length }
    }
}

/// An engine client that records what the store drops from memory, and whether it did so while
/// holding the index's lock (``HeldLocks``, kept in debug builds).
private final class MemoryDrops: QuietEngineClient, @unchecked Sendable {
    // @unchecked Sendable: its state is behind a lock.
    struct Drop { var keys: [String]?; var inIndexHold: Bool }
    private let recorded = Locked<[Drop]>([])
    var drops: [Drop] { recorded.withLock { $0 } }

    func dropFromMemory(_ keys: [String]?) { record(keys) }
    func dropFromMemory(key: String) { record([key]) }

    private func record(_ keys: [String]?) {
        #if DEBUG
        let inHold = HeldLocks.highestIs(.storeIndex)
        #else
        let inHold = true
        #endif
        recorded.withLock { $0.append(Drop(keys: keys, inIndexHold: inHold)) }
    }
}
