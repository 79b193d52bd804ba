import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Random sessions against a model (held-out attacks on the disk engine v4: reads off the queue, mapped
/// segments, a key directory kept as the store goes, a key uses file made ready ahead).
@Suite("Random sessions against a model: values, order of least recent use, files left", .serialized)
struct ModelSessionTests: ModelSessionScenario {
    /// A random session script's settings: seed, and the `maxSize` of every session (0: none).
    struct Run: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var maxSize: Int
        var testDescription: String { "seed \(seed), maxSize \(maxSize)" }
    }

    static let runs: [Run] = (1...6).map { Run(seed: $0, maxSize: 0) } + (7...12).map { Run(seed: $0, maxSize: 60_000 + Int($0) * 7_000) }

    @Test("random sessions of reads, writes, removals, removeAll, compaction, trims, a folder removed and reopens match a model, and leave no stray file",
          arguments: runs)
    func randomSessions(run: Run) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let seed = run.seed
        var random = SeededGenerator(seed: seed &* 7919)
        let keys = (0..<700).map { "k\($0)" } + ["", "a/b", "..", "caf\u{E9}", "cafe\u{301}", "\u{1100}\u{1161}", "\u{AC00}", "\u{0}nul", "k1\u{0}"]
        var model = Model()
        var version = 0
        let limit = run.maxSize
        /// A value's size: now and then one kept in a file of its own (but never more than a tenth of the limit).
        func size() -> Int {
            let big = random.below(12) == 0
            let size = big ? 70_000 + random.below(1000) : 20 + random.below(300)
            return limit > 0 ? min(size, limit / 10) : size
        }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            // A filled store, so that sessions that only read have a directory to write uses for.
            do {
                let storage = try openDataStore(path, maxSize: limit, now: clock.function)
                for key in keys.prefix(600) {
                    version += 1
                    clock.advance(by: 1)
                    let data = Self.value(key, version, size: 40 + random.below(200))
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                    if limit > 0 { model.trim(to: limit) }
                }
            }
            for session in 0..<14 {
                var folderGone = false
                var orderKnown = true
                do {
                    let storage = try openDataStore(path, maxSize: limit, now: clock.function)
                    let comment: Comment = "seed \(seed) session \(session) at open"
                    #expect(storage.recoveryIssues.isEmpty, "\(comment): \(storage.recoveryIssues)")
                    try Self.expectMatches(storage, &model, checkOrder: true, comment)
                    let readOnlySession = random.below(3) == 0
                    let steps = 3 + random.below(8)
                    for step in 0..<steps {
                        let comment: Comment = "seed \(seed) session \(session) step \(step)"
                        let choice = readOnlySession ? 0 : random.below(100)
                        clock.advance(by: 1)
                        switch choice {
                        case 0..<45:
                            // Reads: enough, often, for the close to write uses (and for a file made ready).
                            let count = 1 + random.below(500)
                            for _ in 0..<count {
                                let key = keys[random.below(keys.count)]
                                clock.advance(by: 0.001)
                                let got = try Self.read(storage, key)
                                if folderGone {
                                    #expect(got == nil || got == model.values[key], "\(comment): \(key) after the folder went")
                                } else {
                                    #expect(got == model.values[key], "\(comment): \(key)")
                                    model.use(key)
                                }
                            }
                        case 45..<68:
                            let key = keys[random.below(keys.count)]
                            version += 1
                            let data = Self.value(key, version, size: size())
                            try storage.setObject(data, forKey: key)
                            if folderGone { (model, folderGone) = (Model(), false) }
                            model.set(key, data)
                            if limit > 0 {
                                if orderKnown {
                                    model.trim(to: limit)
                                    #expect(Set(storage.allKeys) == Set(model.values.keys), "\(comment): the trim after \(key)")
                                } else {
                                    let kept = Set(storage.allKeys)
                                    for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                                }
                            }
                        case 68..<76:
                            let key = keys[random.below(keys.count)]
                            try storage.removeObject(forKey: key)
                            model.remove(key)
                        case 76..<80:
                            if folderGone { break }
                            let target = model.totalSize * (1 + random.below(9)) / 10
                            try storage.trim(toSize: target)
                            if orderKnown {
                                model.trim(to: target)
                                #expect(Set(storage.allKeys) == Set(model.values.keys), "\(comment): trim(toSize: \(target))")
                            } else {
                                let kept = Set(storage.allKeys)
                                for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                            }
                        case 80..<86:
                            if folderGone { _ = try? storage.compactNow() } else { try storage.compactNow() }
                        case 86..<89:
                            try storage.removeAll()
                            (model, folderGone) = (Model(), false)
                        case 89..<93:
                            // Another program removes the folder between two calls.
                            try? FileManager.default.removeItem(atPath: path)
                            folderGone = true
                            orderKnown = false
                        default:
                            // A batch of writes (in an order of the store's own: the model takes it from the store).
                            var batch: [String: Data] = [:]
                            for _ in 0..<(1 + random.below(40)) {
                                let key = keys[random.below(keys.count)]
                                version += 1
                                batch[key] = Self.value(key, version, size: 10 + random.below(400))
                            }
                            try storage.setObjects(batch)
                            if folderGone { (model, folderGone) = (Model(), false) }
                            for (key, data) in batch { model.set(key, data) }
                            let kept = Set(storage.allKeys)
                            for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                            orderKnown = false
                        }
                        if !orderKnown && !folderGone {
                            // Taken from the store: checked again across the next reopen.
                            model.order = storage.entryInfos.map(\.key)
                            #expect(Set(model.order) == Set(model.values.keys), "\(comment)")
                            orderKnown = true
                        }
                    }
                    if !folderGone {
                        // The order the store has before its close is the model's (the reopen must keep it).
                        let before = storage.entryInfos.map(\.key)
                        #expect(before == model.order, "seed \(seed) session \(session) before the close: first difference at \(Array(zip(before, model.order)).firstIndex { $0.0 != $0.1 } ?? -1)")
                    }
                }
                if folderGone {
                    // The folder went and nothing wrote after: the store at the path is a new one, empty.
                    model.clear()
                }
                let comment: Comment = "seed \(seed) after session \(session)"
                // A background compaction's copy may outlive the close: its unpublished output goes at the next open.
                #expect(Self.strayFiles(path, allowingUnpublished: true).isEmpty, "\(comment): \(Self.strayFiles(path))")
            }
            let storage = try openDataStore(path, maxSize: limit, now: clock.function)
            try Self.expectMatches(storage, &model, checkOrder: true, "seed \(seed) at the end")
            storage.settleCompaction()
            #expect(Self.strayFiles(path).isEmpty, "at the end: \(Self.strayFiles(path))")
        }
    }
}
