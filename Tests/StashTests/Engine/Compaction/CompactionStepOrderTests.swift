import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

// A writer in several processes compacts in steps (Sources/StashEngine/Compaction/Compaction+Steps.swift):
// a step's copies go to a segment numbered above every other, and a replay gives the entry of a set
// record the next use. The order of least recent use must survive a reopen all the same (Contract
// item 5), and reach the other writers: a copy replayed over its original keeps the entry's place; a
// small store writes a key directory before a step deletes segments; and a close after steps that
// deleted segments writes one, whatever the store's size.

@Suite("Compaction in steps keeps the order of least recent use across a reopen", .serialized)
struct CompactionStepOrderTests: ModelSessionScenario {

    /// Which key directories a store writes beside its steps.
    enum Directories: String, CaseIterable, CustomTestStringConvertible {
        case atSteps = "a small store's, before each step deletes segments"
        case atCloseOnly = "none at steps: the close's alone, in a store too small to keep one"
        case kept = "none at steps, in a store that keeps one"
        var testDescription: String { rawValue }
        var directoryMinimum: Int { self == .kept ? 100 : 1 << 30 }
        var stepDirectoryMaximum: Int { self == .atSteps ? 1 << 14 : 0 }
    }

    @Test("random writes and reads while steps compact, then a close: the reopened store has the session's order",
          arguments: Directories.allCases)
    func acrossAClose(directories: Directories) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let url = URL(fileURLWithPath: path)
        let clock = TestClock()
        var random = SeededGenerator(seed: 21)
        let keys = (0..<600).map { "k\($0)" }
        var model = Model()
        func open() throws -> DiskStorage<Data> {
            try DiskStorage(config: DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(),
                                               allowsWritersInOtherProcesses: true),
                            transformer: TransformerFactory.forData(), now: clock.function)
        }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: directories.directoryMinimum, segmentLimit: 64 << 10,
                                 compactionStep: 8 << 10, stepDirectoryMaximum: directories.stepDirectoryMaximum) {
            var inSession: [String] = []
            do {
                let storage = try open()
                var version = 0
                for _ in 0..<4_000 {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    if model.values[key] == nil || random.below(2) == 0 {
                        version += 1
                        let data = Self.value(key, version, size: 100 + random.below(50))
                        try storage.setObject(data, forKey: key)
                        model.set(key, data)
                    } else {
                        #expect(try Self.read(storage, key) == model.values[key])
                        model.use(key)
                    }
                }
                let cycle = storage.engine.sync { $0.compactionCycle }
                #expect(cycle.steps > 5 && cycle.drained > 5, "the steps this test is about: \(cycle)")
                inSession = storage.entryInfos.map(\.key)
            }
            #expect(inSession == model.order, "in the session")
            let reopened = try open().entryInfos.map(\.key)
            #expect(Set(reopened) == Set(model.order))
            let first = Array(zip(reopened, model.order)).firstIndex { $0.0 != $0.1 }
            #expect(first == nil, "after the reopen the order differs from the store's at \(first ?? -1) of \(reopened.count)")
        }
    }

    @Test("a writer killed after a step copied records out of a segment it did not drain: the copies keep their entries' place at the next open")
    func copiesOverTheirOriginalsAfterAKill() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var session = KilledStepSession(path: path)
        try withEngineThresholds(in: path, compactionMinimum: .max / 4, directoryMinimum: 1 << 30, segmentLimit: 16 << 10,
                                 compactionStep: 2 << 10) {
            try session.fill()
            session.store!.thresholds.compactionMinimum = 1 // the next write starts a cycle, and its first step
            try session.set("new", 0)
            let cycle = session.store!.compactionCycle
            #expect(cycle.steps == 1 && cycle.drained == 0, "one step that copied and drained nothing: \(cycle)")
            #expect(session.store!.withIndex { $0.entriesOldestFirst.map(\.0) } == session.model.order, "in the session")
            session.store = nil // killed: no close, no key directory
        }
        let reopened = try session.reopened()
        defer { reopened.close() }
        session.expectOrder(of: reopened)
    }

    @Test("a writer killed after steps drained a segment its key directory names: the entries the directory has there keep their place at the next open")
    func copiesOverTheDirectorysEntriesAfterAKill() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var session = KilledStepSession(path: path)
        try withEngineThresholds(in: path, compactionMinimum: .max / 4, directoryMinimum: 10, segmentLimit: 16 << 10, compactionStep: 4 << 10) {
            try session.fill()
            try session.reopenCompacting() // each write from now on makes a step
            // New keys, until a step drained the oldest segment (the directory's entries there moved, and it went).
            for number in 0..<200 where session.store!.compactionCycle.drained == 0 { try session.set("new\(number)", number) }
            let cycle = session.store!.compactionCycle
            #expect(cycle.drained == 1, "a step drained the oldest segment, not the directory's last: \(cycle)")
            session.store = nil // killed: no close, no key directory
        }
        let reopened = try session.reopened()
        defer { reopened.close() }
        #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFolder.directoryName), "the directory was used, not dropped")
        session.expectOrder(of: reopened)
    }

    @Test("a writer killed after steps drained the segment of its key directory's position: the next open replays the segments, reports no damage and loses nothing")
    func directoryWhosePositionWasDrained() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var session = KilledStepSession(path: path)
        try withEngineThresholds(in: path, compactionMinimum: .max / 4, directoryMinimum: 10, segmentLimit: 16 << 10) {
            try session.fill()
            try session.reopenCompacting() // the next write's step copies every live record
            try session.set("new", 0)
            #expect(session.store!.compactionCycle.drained > 1, "\(session.store!.compactionCycle)")
            session.store = nil // killed: no close, no key directory
        }
        let reopened = try session.reopened()
        defer { reopened.close() }
        for (key, data) in session.model.values {
            #expect(try FilesChangedInPlaceTests.operation(reopened) { try $0.read(key, now: session.time).data } == data, "\(key)")
        }
        #expect(reopened.withIndex { $0.count } == session.model.values.count)
    }
}

extension CompactionStepOrderTests {
    @Test("another writer that opens the store anew after a step deleted segments has the order of use of the writer that made the step")
    func otherWriterAfterAStep() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var session = KilledStepSession(path: path)
        try withEngineThresholds(in: path, compactionMinimum: .max / 4, directoryMinimum: 1 << 30, segmentLimit: 16 << 10) {
            try session.fill()
            let other = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
            defer { other.close() }
            session.store!.thresholds.compactionMinimum = 1 // the next write's step copies every live record
            try session.set("new", 0)
            #expect(session.store!.compactionCycle.drained > 1, "\(session.store!.compactionCycle)")
            try FilesChangedInPlaceTests.operation(other) { _ in } // opens the store anew: its structure changed
            session.expectOrder(of: other)
            session.store!.close()
        }
    }

    @Test("a copy that carries another last use than the one replayed for its entry (uses not recorded) counts as that use, as a set does")
    func copyWithAnotherLastUse() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var session = KilledStepSession(path: path)
        try withEngineThresholds(in: path, compactionMinimum: .max / 4, directoryMinimum: 1 << 30) {
            try session.fill()
            let store = session.store!
            // A compaction's output holding a copy of the least recently used entry, with a later last use.
            let key = session.model.order[0]
            let record = try #require(store.record(forKey: key))
            let value = try #require(session.model.values[key])
            let output = try store.log.createCompactionOutput()
            var buffer: [UInt8] = []
            _ = value.withUnsafeBytes { bytes in
                SegmentFormat.appendSet(key: key, expiry: record.expiry, time: record.lastAccess + 1_000, value: record.value,
                                        inlineBytes: bytes, salt: output.salt, to: &buffer)
            }
            try output.append(buffer)
            try output.publish()
            session.model.use(key)
            session.store = nil // killed
        }
        let reopened = try session.reopened()
        defer { reopened.close() }
        #expect(reopened.log.active.map { $0.flags & SegmentFormat.compactionFlag } == 0, "a compaction's output became the active segment")
        session.expectOrder(of: reopened)
    }
}

/// A writer among several, driven call by call (the folder's lock around each), and a model of its order of use.
private struct KilledStepSession: ModelSessionScenario {
    let path: String
    var store: DiskStore?
    var model = StoreModel()
    var time = Date(timeIntervalSinceReferenceDate: 800_000_000)
    var random = SeededGenerator(seed: 5)

    /// Closes the store (the close writes the key directory) and opens it again, to compact from its next write on.
    mutating func reopenCompacting() throws {
        store!.close()
        store = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        store!.thresholds.compactionMinimum = 1
        store!.thresholds.stepDirectoryMaximum = 0 // no directory of its own before the step deletes segments
    }

    /// The store opened anew after the session, which reported nothing.
    func reopened(sourceLocation: SourceLocation = #_sourceLocation) throws -> DiskStore {
        let reopened = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)", sourceLocation: sourceLocation)
        return reopened
    }

    mutating func set(_ key: String, _ number: Int) throws {
        time += 1
        let (data, now) = (Self.value(key, number, size: 100), time)
        try FilesChangedInPlaceTests.operation(store!) {
            try $0.writer.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false).replaced?.remove()
        }
        model.set(key, data)
    }

    /// Opens the store and writes keys once (the oldest segments hold them), then overwrites of a few others (dead bytes)
    /// with reads of the first ones between them (access records), and a last write (the reads' access
    /// records go with it).
    mutating func fill() throws {
        store = try DiskStore(directory: path, readOnly: false, sharedWriters: true) // under the test's thresholds
        for number in 0..<150 { try set("k\(number)", number) }
        for round in 0..<300 {
            try set("churn\(round % 5)", round)
            let key = "k\(random.below(150))"
            time += 1
            let now = time
            #expect(try FilesChangedInPlaceTests.operation(store!) { try $0.read(key, now: now).data } == model.values[key])
            model.use(key)
        }
        try set("last", 0)
    }

    func expectOrder(of reopened: DiskStore, sourceLocation: SourceLocation = #_sourceLocation) {
        let order = reopened.withIndex { $0.entriesOldestFirst.map(\.0) }
        let first = Array(zip(order, model.order)).firstIndex { $0.0 != $0.1 }
        #expect(order.count == model.order.count && first == nil, "the order differs at \(first ?? -1) of \(order.count)",
                sourceLocation: sourceLocation)
    }
}
