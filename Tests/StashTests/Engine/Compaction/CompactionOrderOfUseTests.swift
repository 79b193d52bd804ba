import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Reads made while a compaction copies, then a write: the order of use the store has after the finish
/// is the one the next open gives, from the key directory or, in a store too small to keep one, from the
/// records (the reads' access records name the inputs, which are gone; the finish notes them again
/// against the copies, after everything written during the copy).
@Suite("Order of use through a compaction's copy", .serialized)
struct CompactionOrderOfUseTests: DiskStoreScenario {
    @Test("reads during the copy, then a write: the same order of use after a reopen", arguments: [false, true])
    func readsThenAWriteDuringTheCopy(fromKeyDirectory: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: fromKeyDirectory ? 1 : 1_000_000) {
            let keys = (0..<6).map { "key-\($0)" }
            do {
                let store = try DiskStore(directory: path, readOnly: false)
                for (index, key) in keys.enumerated() { try Self.set(store, key, Data("v\(index)".utf8)) }
                store.close()
            }
            let store = try DiskStore(directory: path, readOnly: false)
            let held = HeldCompaction(store)
            held.start(store)
            #expect(store.isCompacting)
            var time = Self.now.addingTimeInterval(10)
            try Self.set(store, "key-8", Data("before".utf8), at: time) // written before the reads: stays first of these
            for key in ["key-3", "key-0"] {
                time = time.addingTimeInterval(1)
                _ = try store.read(key, now: time)
            }
            try Self.set(store, "key-9", Data("new".utf8), at: time.addingTimeInterval(1))
            #expect(held.finish(store))
            let order = store.withIndex { $0.entriesOldestFirst.map(\.key) }
            #expect(order == ["key-1", "key-2", "key-4", "key-5", "key-8", "key-3", "key-0", "key-9"])
            store.close()
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(reopened.withIndex { $0.entriesOldestFirst.map(\.key) } == order)
            for (index, key) in keys.enumerated() { #expect(try Self.get(reopened, key) == Data("v\(index)".utf8)) }
        }
    }
}
