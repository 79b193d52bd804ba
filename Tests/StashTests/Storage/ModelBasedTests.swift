import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Random operation sequences applied to a `Storage` and to a dictionary model must agree
/// (contract items 1, 2, 5, 6, 8, 11), across reopens and clock moves. Seeded and bounded.
@Suite("Model-based storage tests")
struct ModelBasedTests {
    private struct ModelEntry {
        var value: Data
        var expiry: Date
    }

    private enum Outcome: Equatable {
        case value(Data)
        case expired
        case notFound
    }

    /// Runs `steps` random operations; with `maxSize`, disk eviction may drop keys the model still has.
    /// With `compaction`, some steps compact the segments on the spot, and the engine's thresholds are
    /// lowered (compaction after 2 KiB of dead records, a snapshot for 8 entries or more), so background
    /// compactions and snapshots happen too.
    private func run(seed: UInt64, steps: Int, maxSize: Int, compaction: Bool = false)
        throws -> (operations: Int, reopens: Int, evictions: Int, compactions: Int) {
        let directory = TemporaryDirectory()
        guard !compaction else {
            return try withEngineThresholds(in: directory.path, compactionMinimum: 2 << 10, directoryMinimum: 8) {
                try run(seed: seed, steps: steps, maxSize: maxSize, compaction: compaction, in: directory)
            }
        }
        return try run(seed: seed, steps: steps, maxSize: maxSize, compaction: compaction, in: directory)
    }

    private func run(seed: UInt64, steps: Int, maxSize: Int, compaction: Bool, in directory: TemporaryDirectory)
        throws -> (operations: Int, reopens: Int, evictions: Int, compactions: Int) {
        let clock = TestClock()
        var random = SeededGenerator(seed: seed)
        var model: [String: ModelEntry] = [:]
        var reopens = 0
        var evictions = 0
        var compactions = 0
        func open() throws -> Storage<Data> {
            try Storage<Data>(diskConfig: directory.diskConfig(maxSize: maxSize), memoryConfig: MemoryConfig(countLimit: 5),
                              transformer: TransformerFactory.forData(), now: clock.function)
        }
        var storage: Storage<Data>? = try open()
        var second: Storage<Data>? = nil // a second instance on the same folder, now and then

        for step in 0..<steps {
            let key = ["a", "b", "c", "", "../x", "ключ", "k/\(random.next() % 4)", "long" + String(repeating: "z", count: 300)][Int(random.next() % 8)]
            let target = (second != nil && random.next() % 3 == 0) ? second! : storage!
            switch random.next() % 100 {
            case 0..<35:
                let value = Data((0..<(random.next() % 120)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
                let seconds: Double? = random.next() % 3 == 0 ? Double(random.next() % 100) : nil
                try target.setObject(value, forKey: key, expiry: seconds.map { .seconds($0) })
                // The model's own arithmetic, not Expiry's: a bug there must show as a disagreement.
                model[key] = ModelEntry(value: value, expiry: seconds.map { clock.now + $0 } ?? .distantFuture)
            case 35..<70:
                let actual: Outcome
                do { actual = .value(try target.object(forKey: key)) } catch StorageError.expired { actual = .expired } catch StorageError.notFound { actual = .notFound }
                let expected: Outcome = model[key].map { clock.now >= $0.expiry ? .expired : .value($0.value) } ?? .notFound
                if maxSize > 0, actual == .notFound, expected != .notFound {
                    model[key] = nil // evicted by the disk limit: allowed (contract 5)
                    evictions += 1
                } else {
                    #expect(actual == expected, "seed \(seed) step \(step) key \(key)")
                }
                #expect(try target.existsObject(forKey: key) == (actual != .notFound && actual != .expired))
            case 70..<78:
                try target.removeObject(forKey: key)
                model[key] = nil
            case 78..<80:
                try target.removeAll()
                model.removeAll()
            case 80..<88:
                clock.advance(by: Double(random.next() % 12)) // small steps, so expiry boundaries are hit
            case 88..<92:
                try target.removeExpiredObjects()
                model = model.filter { clock.now < $0.value.expiry }
            case 92..<94 where compaction:
                try target.hybridStorage.engine.sync { try $0.compactNow() }
                compactions += 1
            case 92..<96:
                second = second == nil ? try open() : nil
            default: // reopen: every instance released, the engine closes, a new one replays the journal
                storage = nil
                second = nil
                storage = try open()
                reopens += 1
            }
            let keys = Set(storage!.allKeys)
            if maxSize > 0 {
                #expect(keys.isSubset(of: Set(model.keys)), "seed \(seed) step \(step)")
                #expect(storage!.totalSize <= maxSize)
            } else {
                #expect(keys == Set(model.keys), "seed \(seed) step \(step)")
            }
        }
        return (steps, reopens, evictions, compactions)
    }

    @Test("Storage agrees with a dictionary model over random operations, reopens and clock moves",
          arguments: [11, 12, 13, 14] as [UInt64])
    func agreesWithModel(seed: UInt64) throws {
        let result = try run(seed: seed, steps: 1500, maxSize: 0)
        #expect(result.reopens > 10)
        print("model: seed \(seed), \(result.operations) operations, \(result.reopens) reopens")
    }

    @Test("with a disk limit, Storage agrees with the model except for allowed evictions",
          arguments: [21, 22] as [UInt64])
    func agreesWithModelUnderLimit(seed: UInt64) throws {
        let result = try run(seed: seed, steps: 1500, maxSize: 400)
        #expect(result.evictions > 0)
        print("model: seed \(seed) with maxSize 400, \(result.operations) operations, \(result.reopens) reopens, \(result.evictions) evictions")
    }

    // Issue #16: the model-based test with reopen and compaction. Thresholds lowered: compaction starts
    // after 2 KiB of dead records and every reopen of 8 or more entries goes through a snapshot.
    @Test("with compaction and snapshots at tiny thresholds, Storage agrees with the model across reopens",
          arguments: [31, 32, 33] as [UInt64])
    func agreesWithModelThroughCompaction(seed: UInt64) throws {
        let result = try run(seed: seed, steps: 1500, maxSize: 0, compaction: true)
        #expect(result.reopens > 10)
        #expect(result.compactions > 10)
        print("model: seed \(seed) with compaction, \(result.operations) operations, \(result.reopens) reopens, \(result.compactions) forced compactions")
    }

    @Test("with a disk limit, compaction and snapshots, Storage agrees with the model except for allowed evictions",
          arguments: [41] as [UInt64])
    func agreesWithModelUnderLimitThroughCompaction(seed: UInt64) throws {
        let result = try run(seed: seed, steps: 1500, maxSize: 400, compaction: true)
        #expect(result.evictions > 0)
    }
}
