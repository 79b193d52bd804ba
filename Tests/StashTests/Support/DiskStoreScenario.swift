import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Tests that drive a ``DiskStore`` directly, below the typed layers: writes at a chosen time, reads,
/// compactions held between their copy (off the queue) and their finish (``HeldCompaction``), so a
/// race with a close, a new open, the folder's removal or a write is deterministic instead of
/// timing-dependent; and version-1 stores written by hand. A suite adopts it and calls `Self.set`…
protocol DiskStoreScenario {}

extension DiskStoreScenario {
    static var now: Date { Date(timeIntervalSince1970: 1_800_000_000) }

    static func set(_ store: DiskStore, _ key: String, _ data: Data, asFile: Bool = false, at time: Date = now) throws {
        let result = try store.writer.write(key, data, expiry: .distantFuture, now: time, maxSize: 0, durable: false,
                                     storesValuesAsFiles: asFile)
        result.replaced?.remove() // what the engine does off the queue
    }

    static func get(_ store: DiskStore, _ key: String) throws -> Data {
        try store.read(key, now: now).data
    }

    static func isNotFound(_ store: DiskStore, _ key: String) -> Bool {
        do {
            _ = try store.read(key, now: now)
            return false
        } catch let error as StorageError {
            return error.isNotFound
        } catch {
            return false
        }
    }

    /// What ``Compaction/startIfNeeded()`` captures before it copies off the queue, taken by
    /// hand: the copy can then run at a moment the test chooses (a thread that was delayed).
    static func beginCompactionByHand(_ store: DiskStore) throws
        -> (records: [KeyDirectory.LiveRecord], seed: UInt64, victims: [SegmentFile], first: UInt32,
            folder: FolderHandle, store: UInt64) {
        let first = store.log.nextSegmentID
        store.log.nextSegmentID += 1
        try store.log.roll()
        let victims = store.log.segments.values.filter { $0.id < first }.sorted { $0.id < $1.id }
        let (records, seed) = store.withIndex { ($0.recordsForCompaction(), $0.seed) }
        store.isCompacting = true
        return (records, seed, victims, first, store.log.folder.handle, store.log.folder.storeID)
    }

    static func compactNow(_ store: DiskStore) -> Bool {
        let held = HeldCompaction(store)
        held.start(store)
        return held.finish(store)
    }

    static func fileNames(_ path: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    /// Writes a version-1 store: its journal and one file per value.
    static func writeVersion1Store(at path: String, _ values: [(key: String, data: Data, lastAccess: Double)]) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        var journal = JournalFormat.magic
        for (index, value) in values.enumerated() {
            let generation = UInt64(index + 1)
            let info = V1Record(generation: generation, size: value.data.count,
                                expiry: Date.distantFuture.timeIntervalSince1970, lastAccess: value.lastAccess)
            JournalFormat.append(.set(key: value.key, info), to: &journal)
            try value.data.write(to: URL(fileURLWithPath: path + "/" + DiskStore.version1FileName(forKey: value.key, generation: generation)))
        }
        try Data(journal).write(to: URL(fileURLWithPath: path + "/" + StoreFolder.v1JournalName))
    }
}
