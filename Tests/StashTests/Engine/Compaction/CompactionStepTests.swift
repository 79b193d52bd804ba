import Foundation
import Testing
@testable import Stash
@testable import StashEngine
import StashTestSupport

// A writer in several processes compacts in bounded steps inside its calls (Docs/Architecture.md,
// "Compaction"; Sources/StashEngine/Compaction/Compaction+Steps.swift): the bytes a call copies
// are counted by the store (`compactionCycle`), never timed.

@Suite("A shared writer's compaction in bounded steps")
struct CompactionStepTests {
    static let step = 4_096

    @Test("overwrites and removals: no call copies more than the step's bound, and every value stays right")
    func noCallCopiesMoreThanTheBound() throws {
        let folder = TemporaryDirectory()
        var model: [String: Data] = [:]
        try withEngineThresholds(in: folder.storePath(), compactionMinimum: 8_192, segmentLimit: 32_768, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            var random = SeededGenerator(seed: 29)
            for index in 0..<3_000 {
                let key = "k\(random.below(40))"
                if random.below(10) == 0 {
                    try disk.removeObject(forKey: key)
                    model[key] = nil
                } else {
                    let value = Data(repeating: UInt8(truncatingIfNeeded: index), count: 50 + random.below(900))
                    try disk.setObject(value, forKey: key)
                    model[key] = value
                }
                let cycle = disk.engine.sync { $0.compactionCycle }
                #expect(cycle.largestCopy <= Self.step, "call \(index) copied \(cycle.largestCopy) bytes")
                if cycle.largestCopy > Self.step { break }
            }
            let cycle = disk.engine.sync { $0.compactionCycle }
            #expect(cycle.steps > 20 && cycle.drained > 5, "\(cycle)")
            // Reads: a window of about the bound, twice at most, and one record more.
            #expect(cycle.largestRead <= 2 * Self.step + 2 * 1_024, "\(cycle)")
            for key in (0..<40).map({ "k\($0)" }) {
                #expect((try? disk.object(forKey: key)) == model[key], "\(key)")
            }
        }
        let reopened = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        for key in (0..<40).map({ "k\($0)" }) {
            #expect((try? reopened.object(forKey: key)) == model[key], "\(key) after a reopen")
        }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    @Test("a store that opens mostly dead is compacted over many calls, each within the bound, until the dead bytes are gone (also when each call forgets where the last step stopped, as a process launched for one write does)",
          arguments: [false, true])
    func deadBytesAreReclaimedOverManyCalls(forgetting: Bool) throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        var model: [String: Data] = [:]
        try withEngineThresholds(in: store, compactionMinimum: .max / 4, segmentLimit: 32_768) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            for round in 0..<20 {
                for key in 0..<40 {
                    let value = Data(repeating: UInt8(round), count: 400 + key)
                    try disk.setObject(value, forKey: "k\(key)")
                    model["k\(key)"] = value
                }
            }
        }
        let before = try segmentBytes(store)
        try withEngineThresholds(in: store, compactionMinimum: 8_192, segmentLimit: 32_768, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            var calls = 0
            repeat {
                if forgetting { disk.engine.sync { $0.compactionCycle.resume = nil } }
                try disk.setObject(Data("tick".utf8), forKey: "tick")
                calls += 1
            } while calls < 1_000 && disk.engine.sync({ $0.compactionCycle.end != nil || $0.compactionCycle.steps == 0 })
            let cycle = disk.engine.sync { $0.compactionCycle }
            #expect(cycle.end == nil, "the cycle did not end in \(calls) calls: \(cycle)")
            #expect(cycle.largestCopy <= Self.step && cycle.steps >= 4, "\(cycle)")
            let after = try segmentBytes(store)
            #expect(after < before / 5, "\(before) bytes of segments before, \(after) after \(calls) calls")
            for (key, value) in model { #expect((try? disk.object(forKey: key)) == value, "\(key)") }
        }
        let reopened = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        for (key, value) in model { #expect((try? reopened.object(forKey: key)) == value, "\(key) after a reopen") }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    @Test("a record longer than the bound is copied alone, one a call")
    func longerRecordIsCopiedAlone() throws {
        let folder = TemporaryDirectory()
        try withEngineThresholds(in: folder.storePath(), compactionMinimum: 8_192, segmentLimit: 65_536, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            // Kept from the start (copied by the steps), beside overwrites that make the dead bytes.
            for key in 0..<4 { try disk.setObject(Data(repeating: UInt8(key), count: 10_000 + key), forKey: "big\(key)") }
            for round in 0..<60 { try disk.setObject(Data(repeating: UInt8(round), count: 10_000), forKey: "churn\(round % 2)") }
            let cycle = disk.engine.sync { $0.compactionCycle }
            #expect(cycle.steps > 0 && cycle.largestCopy > Self.step && cycle.largestCopy < 10_200, "\(cycle)")
            for key in 0..<4 { #expect(try disk.object(forKey: "big\(key)") == Data(repeating: UInt8(key), count: 10_000 + key)) }
            #expect(try disk.object(forKey: "churn1") == Data(repeating: 59, count: 10_000))
        }
    }

    @Test("a key directory that names segments a step deleted is still used by the next open, and right")
    func keyDirectoryOutlivesDrainedSegments() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        var model: [String: Data] = [:]
        try withEngineThresholds(in: store, compactionMinimum: .max / 4, directoryMinimum: 10, segmentLimit: 32_768) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            for round in 0..<10 {
                for key in 0..<40 {
                    let value = Data(repeating: UInt8(round), count: 300 + key)
                    try disk.setObject(value, forKey: "k\(key)")
                    model["k\(key)"] = value
                }
            }
        } // closed: the key directory is written
        try withEngineThresholds(in: store, compactionMinimum: 8_192, directoryMinimum: 10, segmentLimit: 32_768, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            var calls = 0
            while calls < 200, disk.engine.sync({ $0.compactionCycle.drained == 0 }) {
                try disk.setObject(Data("tick".utf8), forKey: "tick")
                calls += 1
            }
            model["tick"] = Data("tick".utf8)
            #expect(disk.engine.sync { $0.compactionCycle.drained } > 0, "no segment drained in \(calls) calls")
            // A reader opens now, beside the writer that still has the store open (it writes no new
            // directory): a store of its own, not the writer's engine.
            let reader = try DiskStore(directory: store, readOnly: true)
            defer { reader.close() }
            #expect(!reader.recoveryIssues.contains { "\($0)".contains("key directory") }, "\(reader.recoveryIssues)")
            for (key, value) in model { #expect((try? reader.read(key, now: Date()).data) == value, "\(key)") }
        }
    }

    @Test("a segment a step stopped in, cut short in place by another program: the next steps neither trap nor stop the store",
          arguments: [100, 40])
    func segmentCutShortUnderAStep(keptBytes: Int) throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        try withEngineThresholds(in: store, compactionMinimum: 8_192, segmentLimit: 32_768, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            var calls = 0
            while calls < 500, disk.engine.sync({ $0.compactionCycle.resume == nil }) {
                try disk.setObject(Data(repeating: UInt8(truncatingIfNeeded: calls), count: 700), forKey: "k\(calls % 8)")
                calls += 1
            }
            let resume = try #require(disk.engine.sync { $0.compactionCycle.resume }, "no step stopped inside a segment")
            // Shorter than where the step stopped (100 bytes: a header and a little; 40: not even a header).
            #expect(truncate(store + "/" + SegmentFile.name(of: resume.segment), off_t(keptBytes)) == 0)
            for index in 0..<200 {
                try disk.setObject(Data(repeating: 7, count: 700), forKey: "after\(index % 8)")
            }
            for index in 0..<8 { #expect(try disk.object(forKey: "after\(index)") == Data(repeating: 7, count: 700)) }
        }
    }

    @Test("a step whose output cannot be published (its name taken) loses nothing: the next steps copy those records again")
    func failedStepLosesNothing() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        var model: [String: Data] = [:]
        try withEngineThresholds(in: store, compactionMinimum: .max / 4, segmentLimit: 32_768, compactionStep: Self.step) {
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            for key in 0..<60 { // written once, the first segment full of them: the steps copy them
                model["stable\(key)"] = Data(repeating: UInt8(key), count: 700)
                try disk.setObject(model["stable\(key)"]!, forKey: "stable\(key)")
            }
            for index in 0..<100 { try disk.setObject(Data(repeating: UInt8(index), count: 700), forKey: "churn") }
            model["churn"] = Data(repeating: 99, count: 700)
            // One step by hand: it copies part of the first segment and stops inside it.
            let first = try #require(disk.engine.sync { store in
                store.thresholds.compactionMinimum = 8_192
                store.compaction.stepIfNeeded()
                return store.compactionCycle.resume.map { $0.segment == store.log.segments.keys.min() ? $0.segment : nil } ?? nil
            }, "the first step did not stop inside the first segment")
            // The next step's output finds its name taken: it fails, its copies discarded.
            let next = disk.engine.sync { $0.log.nextSegmentID }
            try Data(repeating: 0xAB, count: 200).write(to: URL(fileURLWithPath: store + "/" + SegmentFile.name(of: next)))
            #expect(disk.engine.sync { store in
                store.compaction.stepIfNeeded()
                return store.compactionCycle.failed
            } == 1)
            var steps = 0
            while steps < 500, disk.engine.sync({ store in store.log.segments[first] != nil }) {
                disk.engine.sync { $0.compaction.stepIfNeeded() }
                steps += 1
            }
            #expect(disk.engine.sync { $0.log.segments[first] } == nil, "the first segment was not drained in \(steps) steps")
        }
        // Read from the files (the engine keeps values it wrote in memory).
        let reopened = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        for (key, value) in model { #expect((try? reopened.object(forKey: key)) == value, "\(key)") }
    }

    /// The bytes of the store's segment files.
    private func segmentBytes(_ store: String) throws -> Int {
        try StoreFiles(store).segments.reduce(0) { total, name in
            let size = try FileManager.default.attributesOfItem(atPath: store + "/" + name)[.size] as? Int ?? 0
            return total + size
        }
    }
}
