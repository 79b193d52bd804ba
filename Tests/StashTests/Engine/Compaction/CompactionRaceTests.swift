import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A background compaction copies off the store's queue and finishes on it: held between the two
/// (``HeldCompaction``), it meets a store closed and opened again, the folder removed, and writes,
/// overwrites, removals, `removeAll` and reads made meanwhile; none brings a removed key back, loses a
/// write or leaves a file behind.
@Suite("Compaction racing with a close, a new open, the folder's removal and writes", .serialized)
struct CompactionRaceTests: DiskStoreScenario {
    @Test("a compaction still copying when its store is closed cannot bring a key removed later back")
    func closedStoresCompactionResurrectsRemovedKey() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var first: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<3 { try Self.set(first!, "k\(index)", Data("value \(index)".utf8)) }
        // The first store starts a compaction; before its thread gets to create its output, the
        // store is closed and released (its engine's last storage went away), which frees the lock.
        let copy = try Self.beginCompactionByHand(first!)
        first!.close()
        first = nil
        // A new store opens the folder: the output does not exist yet, so it is no segment of it.
        var second: DiskStore? = try DiskStore(directory: path, readOnly: false)
        #expect(second!.log.segments[copy.first] == nil)
        // Now the old thread runs: it writes its output (every key as of its start) into the folder.
        let result = DiskStore.compact(copy.records, seed: copy.seed, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        #expect(result.failure == nil)
        // The new store removes two keys and compacts: tombstones are not copied, the inputs go.
        try second!.writer.remove("k0")
        try second!.writer.remove("k1")
        #expect(Self.compactNow(second!))
        #expect(Self.isNotFound(second!, "k0"))
        second!.close()
        second = nil
        // Reopened: the orphan output (a lower id than the new store's segments) replays first and
        // nothing removes its keys any more.
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "k0"), "k0 was removed, yet it is back: \(Self.fileNames(path))")
        #expect(Self.isNotFound(reopened, "k1"))
        #expect(try Self.get(reopened, "k2") == Data("value 2".utf8))
    }

    @Test("a compaction in flight when the folder is removed writes none of the old data into the new folder")
    func compactionAfterFolderRemovalLeaksOldDataIntoNewFolder() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "secret", Data("deleted with the folder".utf8))
        let copy = try Self.beginCompactionByHand(store!)
        // The user deletes the folder; the next write starts the store over in a new folder.
        try FileManager.default.removeItem(atPath: path)
        try Self.set(store!, "fresh", Data("new".utf8))
        #expect(Self.isNotFound(store!, "secret"))
        // The compaction thread (it read the deleted segments through its open descriptors) now
        // creates its output: by path, so in the new folder.
        let result = DiskStore.compact(copy.records, seed: copy.seed, victims: copy.victims, into: copy.first, count: 1, folder: copy.folder, store: copy.store)
        // The store is closed (or the process dies) before the discarded compaction's finish removed it.
        _ = result
        store!.close()
        store = nil
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.isNotFound(reopened, "secret"), "a value of the removed folder is back: \(Self.fileNames(path))")
        #expect(try Self.get(reopened, "fresh") == Data("new".utf8))
    }

    @Test("writes, overwrites and removals of value files while a compaction copies: right values, no orphan, no loss")
    func valueFilesDuringCompaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<6 { try Self.set(store, "f\(index)", Data("file \(index)".utf8), asFile: true) }
            for index in 0..<6 { try Self.set(store, "dead\(index)", Data(repeating: 1, count: 2000)) }
            for index in 0..<6 { try store.writer.remove("dead\(index)") }
            let held = HeldCompaction(store)
            held.start(store)
            try Self.set(store, "f0", Data("file 0, again".utf8), asFile: true) // overwrite during the copy
            try store.writer.remove("f1")
            try Self.set(store, "big", Data(repeating: 7, count: ValueFiles.threshold))
            try Self.set(store, "f2", Data("now inline".utf8)) // a file value replaced by an inline one
            #expect(held.finish(store))
            #expect(try Self.get(store, "f0") == Data("file 0, again".utf8))
            #expect(Self.isNotFound(store, "f1"))
            store.close()
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(try Self.get(reopened, "f0") == Data("file 0, again".utf8))
        #expect(Self.isNotFound(reopened, "f1"))
        #expect(try Self.get(reopened, "f2") == Data("now inline".utf8))
        #expect(try Self.get(reopened, "big") == Data(repeating: 7, count: ValueFiles.threshold))
        for index in 3..<6 { #expect(try Self.get(reopened, "f\(index)") == Data("file \(index)".utf8)) }
        // f0 (new), f3, f4, f5, big: exactly the files the index names.
        #expect(Self.fileNames(path).filter { $0.hasSuffix(".value") }.count == 5, "\(Self.fileNames(path))")
    }

    @Test("removeAll while a compaction copies, then a crash before anything else: the store is empty")
    func removeAllDuringCompaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<10 { try Self.set(store, "k\(index)", Data(repeating: 2, count: 3000), asFile: index < 3) }
            for index in 5..<10 { try store.writer.remove("k\(index)") }
            let held = HeldCompaction(store)
            held.start(store)
            try store.writer.removeAll()
            try Self.set(store, "after", Data("after".utf8))
            #expect(held.finish(store))
            // No close: the process dies here.
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.keys == ["after"])
        #expect(try Self.get(reopened, "after") == Data("after".utf8))
    }

    @Test("access records of reads made while a compaction copied keep the LRU order across a restart")
    func accessDuringCompactionSurvivesRestart() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for index in 0..<4 {
                try Self.set(store, "k\(index)", Data(repeating: 1, count: 100), at: Self.now.addingTimeInterval(Double(index)))
            }
            try Self.set(store, "dead", Data(repeating: 1, count: 2000))
            try store.writer.remove("dead")
            let held = HeldCompaction(store)
            held.start(store)
            _ = try store.read("k0", now: Self.now.addingTimeInterval(100)) // k0: now the most recent
            #expect(held.finish(store))
            try store.log.flushAccesses()
            #expect(store.withIndex { $0.entriesOldestFirst.map(\.key) } == ["k1", "k2", "k3", "k0"])
            // No close: a crash (close would write the order in a snapshot only for a large store).
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.withIndex { $0.entriesOldestFirst.map(\.key) } == ["k1", "k2", "k3", "k0"],
                "k0, read last, would be evicted first")
    }
}
