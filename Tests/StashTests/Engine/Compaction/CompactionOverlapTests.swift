import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Issue #20 item 10a: a compaction on demand (``DiskStore/compactNow()``, which `repair` runs) while a
/// background compaction is under way must not let two compactions overlap: it used to clear
/// `isCompacting` while the background one was still copying, so the next write could start a second.
@Suite("Compaction on demand during a background compaction", .serialized)
struct CompactionOverlapTests: DiskStoreScenario {
    private typealias Held = HeldCompaction

    private func fill(_ store: DiskStore, rounds: Int = 3) throws {
        for round in 0..<rounds {
            for index in 0..<20 { try Self.set(store, "k\(index)", Data("value \(index) \(round)".utf8)) }
        }
    }

    private func expectIntact(_ store: DiskStore, round: Int = 2) throws {
        for index in 0..<20 {
            #expect(try Self.get(store, "k\(index)") == Data("value \(index) \(round)".utf8))
        }
    }

    @Test("compactNow during a background compaction: no second background compaction starts until the first has finished")
    func compactNowKeepsTheBackgroundOneCounted() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var owner: DiskStore? = try DiskStore(directory: path, readOnly: false)
        let store = try #require(owner)
        try fill(store)
        let held = Held(store)
        held.start(store)
        #expect(store.isCompacting)
        try store.compactNow()
        // The background compaction's finish is still to come (its copy may still be running).
        #expect(store.isCompacting, "compactNow cleared the flag of a compaction still under way")
        let reserved = store.log.nextSegmentID
        try fill(store)
        held.start(store) // would start a second background compaction beside the first
        #expect(store.log.nextSegmentID == reserved, "a second background compaction started")
        // The first one finishes: it is discarded (the store compacted since), its outputs removed.
        #expect(held.finish(store))
        #expect(!store.isCompacting)
        try expectIntact(store)
        #expect(!Self.fileNames(path).contains { $0.hasSuffix(SegmentFile.unpublishedSuffix) },
                "\(Self.fileNames(path))")
        // And the next background compaction runs normally.
        held.start(store)
        #expect(store.isCompacting)
        #expect(held.finish(store))
        #expect(!store.isCompacting)
        try expectIntact(store)
        store.close()
        owner = nil // frees the folder's lock once `store` goes too
        _ = consume store
        let reopened = try DiskStore(directory: path, readOnly: false)
        try expectIntact(reopened)
        #expect(reopened.recoveryIssues.isEmpty)
    }

    @Test("repair while background compactions run, over and over: every value intact, nothing left behind")
    func repairDuringBackgroundCompactions() throws {
        let directory = TemporaryDirectory()
        try withEngineThresholds(in: directory.path, compactionMinimum: 2 << 10) {
            let path = directory.storePath()
            let value = { (index: Int, round: Int) in Data(repeating: UInt8(truncatingIfNeeded: index &+ round), count: 300) }
            do {
                let disk = try openDataStore(path)
                for round in 0..<30 {
                    for index in 0..<20 { try disk.setObject(value(index, round), forKey: "k\(index)") }
                    let report = try disk.repair()
                    #expect(report.isClean, "\(report.problems)")
                    for index in 0..<20 { #expect(try disk.object(forKey: "k\(index)") == value(index, round)) }
                }
                disk.waitForCompaction()
                #expect(!disk.isCompacting)
            }
            let reopened = try openDataStore(path)
            #expect(reopened.recoveryIssues.isEmpty)
            for index in 0..<20 { #expect(try reopened.object(forKey: "k\(index)") == value(index, 29)) }
            #expect(!Self.fileNames(path).contains { $0.hasSuffix(SegmentFile.unpublishedSuffix) })
        }
    }
}
