#if DEBUG
import Foundation
@testable import Stash // the engine's thresholds, lowered so that small stores compact in many steps
@testable import StashEngine
import StashTestSupport

// `StashTorture compact-steps …`: writers in several processes whose compaction runs in bounded steps,
// for Tests/StashTests/CompactionStepProcessTests.swift. Every store is opened with
// `allowsWritersInOtherProcesses`, and with the engine's thresholds lowered (a step copies at most
// `stepBytes`); values are `TortureValue`s, so every read checks that it is a complete value of its key.
//
// - `seed DIR`: writes `seedKeys` keys `seedRounds` times (round R: sequence R), never compacting, so
//   that the store opens with most of its bytes dead.
// - `run DIR --rounds N`: overwrites the same keys N rounds more (sequences seedRounds + 1 …), compacting
//   in steps; prints `set KEY SEQ` once each write returned, and `steps S copied C read R drained D` at the end.
// - `verify DIR`: prints `KEY SEQ` for each of those keys (`missing`, `wrong`: not a complete value of it).
// - `writer DIR --tag T --ops N`: N writes of shared keys s0…s7 and of its own keys T-p0…T-p7 (sequences
//   counting up), each own key read back right after; prints the step counters at the end.
// - `reader DIR`: a read-only storage reading every key of writers 1 and 2 until the end of stdin: each
//   value complete, and no key's sequence ever lower than one read before. Prints `reads N`.
// Exits 3 on a wrong value.

enum CompactionStepChild {
    static let stepBytes = 4_096
    static let seedKeys = 16
    static let seedRounds: UInt64 = 10
    static let valueSize = 700

    /// Lowers the thresholds of stores in `path`: compaction never (`seeding`) or in steps of ``stepBytes``.
    static func lowerThresholds(_ path: String, seeding: Bool = false) {
        var thresholds = DiskStore.Thresholds.standard
        thresholds.segmentLimit = 32_768
        thresholds.compactionMinimum = seeding ? Int.max / 4 : 8_192
        thresholds.compactionStep = stepBytes
        DiskStore.thresholdOverrides.withLock { $0[URL(fileURLWithPath: path).standardizedFileURL.path] = thresholds }
    }

    static func open(_ path: String, readOnly: Bool = false) throws -> DiskStorage<Data> {
        let url = URL(fileURLWithPath: path, isDirectory: true)
        let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), readOnly: readOnly,
                                allowsWritersInOtherProcesses: !readOnly)
        return try DiskStorage(config: config, transformer: TransformerFactory.forData())
    }

    static func counters(_ storage: DiskStorage<Data>) -> String {
        let cycle = storage.engine.sync { $0.compactionCycle }
        return "steps \(cycle.steps) copied \(cycle.largestCopy) read \(cycle.largestRead) drained \(cycle.drained)"
    }

    static func run(_ arguments: [String], option: (String) -> String?) throws -> Never {
        guard arguments.count >= 3 else { fail("usage: StashTorture compact-steps seed|run|writer|reader DIR …", status: 2) }
        let path = arguments[2]
        switch arguments[1] {
        case "seed":
            lowerThresholds(path, seeding: true)
            let storage = try open(path)
            for round in 1...seedRounds {
                for key in 0..<seedKeys {
                    try storage.setObject(TortureValue.make(key: "k\(key)", sequence: round, payloadCount: valueSize), forKey: "k\(key)")
                }
            }
            emit("seeded")
        case "run":
            guard let rounds = option("--rounds").flatMap(UInt64.init) else { fail("usage: compact-steps run DIR --rounds N", status: 2) }
            lowerThresholds(path)
            let storage = try open(path)
            for round in (seedRounds + 1)..<(seedRounds + 1 + rounds) {
                for key in 0..<seedKeys {
                    try storage.setObject(TortureValue.make(key: "k\(key)", sequence: round, payloadCount: valueSize), forKey: "k\(key)")
                    emit("set k\(key) \(round)")
                }
            }
            emit(counters(storage))
        case "verify":
            let storage = try open(path)
            for key in (0..<seedKeys).map({ "k\($0)" }) {
                do {
                    let data = try storage.object(forKey: key)
                    emit("\(key) \(TortureValue.sequence(of: data, key: key).map(String.init) ?? "wrong")")
                } catch StorageError.notFound {
                    emit("\(key) missing")
                }
            }
        case "writer":
            guard let tag = option("--tag"), let operations = option("--ops").flatMap(Int.init) else {
                fail("usage: compact-steps writer DIR --tag T --ops N", status: 2)
            }
            lowerThresholds(path)
            let storage = try open(path)
            var random = SeededGenerator(seed: UInt64(tag.utf8.reduce(7) { $0 &* 31 &+ Int($1) }))
            for sequence in 1...UInt64(max(1, operations)) {
                let size = 100 + random.below(1_400)
                if random.below(2) == 0 {
                    let key = "s\(random.below(8))"
                    try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: size), forKey: key)
                    let read = try storage.object(forKey: key)
                    guard TortureValue.sequence(of: read, key: key) != nil else { fail("read a wrong value of \(key)", status: 3) }
                } else {
                    let key = "\(tag)-p\(random.below(8))"
                    try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: size), forKey: key)
                    let read = try storage.object(forKey: key)
                    guard TortureValue.sequence(of: read, key: key) == sequence else {
                        fail("\(key) read back as \(TortureValue.sequence(of: read, key: key).map(String.init) ?? "no value of it"), written #\(sequence)", status: 3)
                    }
                }
            }
            emit(counters(storage))
        case "reader":
            let storage = try open(path, readOnly: true)
            let ended = Locked(false)
            Thread.detachNewThread {
                _ = try? FileHandle.standardInput.readToEnd()
                ended.withLock { $0 = true }
            }
            var highest: [String: UInt64] = [:]
            var reads = 0
            let keys = ["1", "2"].flatMap { tag in (0..<8).map { "\(tag)-p\($0)" } } + (0..<8).map { "s\($0)" }
            while !ended.withLock({ $0 }) {
                for key in keys {
                    let data: Data
                    do {
                        data = try storage.object(forKey: key)
                    } catch StorageError.notFound {
                        guard highest[key] == nil else { fail("\(key) was there (#\(highest[key]!)) and then not", status: 3) }
                        continue
                    }
                    guard let sequence = TortureValue.sequence(of: data, key: key) else { fail("read a wrong value of \(key)", status: 3) }
                    // A writer's own keys only go up; shared keys are written by both, with sequences of their own.
                    if key.contains("-p"), let before = highest[key], sequence < before {
                        fail("\(key) went back from #\(before) to #\(sequence)", status: 3)
                    }
                    highest[key] = max(highest[key] ?? 0, sequence)
                    reads += 1
                }
            }
            emit("reads \(reads)")
        default:
            fail("usage: StashTorture compact-steps seed|run|writer|reader DIR …", status: 2)
        }
        exit(0)
    }
}
#endif
