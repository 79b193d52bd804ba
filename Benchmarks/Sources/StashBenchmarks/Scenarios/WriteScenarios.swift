import Foundation
import Stash

/// setObject for a new key and over an existing one, default (no fsync) and durable.
enum WriteScenarios {
    /// Every key, written once into empty stores, in random order.
    static func setNew<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        let samples = try timedWrites(pair, order: Fixtures.shuffled(pair.keys.count, seed: 1), revision: 0, bench: bench)
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store",
                      target: pair.durable ? .none : minStoreTarget(pair.kind)))
    }

    /// Every key again, with a new value, in another random order.
    static func overwrite<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        let samples = try timedWrites(pair, order: Fixtures.shuffled(pair.keys.count, seed: 2), revision: 1, bench: bench)
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store",
                      target: pair.durable ? .none : minStoreTarget(pair.kind)))
    }

    /// Issue #16: 100 KB `Data` within 1.2× the min store; the small Codable value keeps 1.3×.
    private static func minStoreTarget<T>(_ kind: Kind<T>) -> Target {
        .ratio(kind.name == Kind<Data>.data.name ? 1.2 : 1.3)
    }

    /// Writes the keys in `order` into both stores, one batch of each in turn; returns both sides' ns/op samples.
    private static func timedWrites<T>(_ pair: Pair<T>, order: [Int], revision: Int, bench: Bench) throws -> [[Double]] {
        // fsync makes durable writes ~100× slower: smaller batches keep the sample count up.
        let chunks = order.chunked(pair.durable ? 20 : bench.settings.batch)
        let values = pair.keys.indices.map { pair.kind.value($0, revision) } // built before the clock starts
        let (stash, min, keys) = (pair.stash, pair.min, pair.keys)
        return try Measure.interleaved(rounds: chunks.count, [
            { round in
                try Measure.nsPerOp(chunks[round].count) {
                    for index in chunks[round] { try stash.setObject(values[index], forKey: keys[index]) }
                }
            },
            { round in
                try Measure.nsPerOp(chunks[round].count) {
                    for index in chunks[round] { try min.setObject(values[index], forKey: keys[index]) }
                }
            },
        ])
    }
}
