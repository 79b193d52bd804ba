import Foundation
import Stash

/// Reads: memory hits, disk hits with cold memory, and existsObject answered from the index.
enum ReadScenarios {
    /// Every key is in both stores' memory (they were just written); NSCache gets the same values.
    static func memoryHit<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        let (stash, min, keys, weight) = (pair.stash, pair.min, pair.keys, pair.kind.weight)
        let nsCache = NSCacheBaseline<T>()
        let nsKeys = keys.map { NSString(string: $0) }
        for index in keys.indices { nsCache.set(try min.object(forKey: keys[index]), forKey: nsKeys[index]) }
        let order = Fixtures.shuffled(keys.count, seed: 3)
        let samples = try Measure.interleaved(rounds: bench.settings.memoryRounds, [
            { _ in try Measure.nsPerOp(order.count) { for index in order { consume(weight(try stash.object(forKey: keys[index]))) } } },
            { _ in try Measure.nsPerOp(order.count) { for index in order { consume(weight(try min.object(forKey: keys[index]))) } } },
            { _ in
                var missing = 0
                let ns = Measure.nsPerOp(order.count) {
                    for index in order {
                        if let value = nsCache.object(forKey: nsKeys[index]) { consume(weight(value)) } else { missing += 1 }
                    }
                }
                guard missing == 0 else { throw BenchError("NSCache lost \(missing) entries") }
                return ns
            },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store", target: .ratio(1.3)))
        bench.add(Row(label + " (vs NSCache)", stash: samples[0], baseline: samples[2], vs: "NSCache"))
    }

    /// Fresh instances (cold memory, warm OS cache), then every key read once, in random order.
    static func coldDiskHit<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        var samples: [[Double]] = [[], []]
        for pass in 0..<bench.settings.coldPasses {
            try pair.reopen()
            let (stash, min, keys, weight) = (pair.stash, pair.min, pair.keys, pair.kind.weight)
            let chunks = Fixtures.shuffled(keys.count, seed: 10 + UInt64(pass)).chunked(bench.settings.batch)
            let pass = try Measure.interleaved(rounds: chunks.count, [
                { round in
                    try Measure.nsPerOp(chunks[round].count) {
                        for index in chunks[round] { consume(weight(try stash.object(forKey: keys[index]))) }
                    }
                },
                { round in
                    try Measure.nsPerOp(chunks[round].count) {
                        for index in chunks[round] { consume(weight(try min.object(forKey: keys[index]))) }
                    }
                },
            ])
            samples[0] += pass[0]
            samples[1] += pass[1]
        }
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store", target: .ratio(1.2)))
    }

    /// existsObject with cold memory, for stored keys and for keys never stored, against one `stat`.
    /// The target is absolute (≤ 1 µs): the index answers without touching the disk.
    static func exists<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        try pair.reopen()
        let (stash, min) = (pair.stash, pair.min)
        let order = Fixtures.shuffled(pair.keys.count, seed: 4)
        let hits = order.map { pair.keys[$0] }
        let misses = order.map(Fixtures.missingKey)
        let hitPaths = hits.map(min.path(forKey:))
        let missPaths = misses.map(min.path(forKey:))
        func count(_ keys: [String], expecting expected: Int, _ exists: (String) throws -> Bool) throws -> Double {
            var found = 0
            let ns = try Measure.nsPerOp(keys.count) { for key in keys { if try exists(key) { found += 1 } } }
            guard found == expected else { throw BenchError("\(label): found \(found) of \(keys.count), expected \(expected)") }
            return ns
        }
        let samples = try Measure.interleaved(rounds: bench.settings.existsRounds, [
            { _ in try count(hits, expecting: hits.count) { try stash.existsObject(forKey: $0) } },
            { _ in try count(hitPaths, expecting: hits.count) { RawFile.exists($0) } },
            { _ in try count(misses, expecting: 0) { try stash.existsObject(forKey: $0) } },
            { _ in try count(missPaths, expecting: 0) { RawFile.exists($0) } },
        ])
        let name = label.replacingOccurrences(of: "existsObject", with: "")
        bench.add(Row("existsObject hit" + name, stash: samples[0], baseline: samples[1], vs: "stat", target: .absolute(1_000)))
        bench.add(Row("existsObject miss" + name, stash: samples[2], baseline: samples[3], vs: "stat", target: .absolute(1_000)))
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
