import Foundation
import Stash

/// The async/await memory hit against the synchronous one, in the same run (issue #10 item 8).
enum AsyncHitScenario {
    /// Every key is in memory; one task awaits `async.object(forKey:)` key after key, and the other side
    /// reads the same keys with the synchronous `object(forKey:)`. Targets: at most 4× the synchronous
    /// hit (first row) and at most 2 µs (second row): a hit is answered without a thread hop.
    static func run(_ pair: Pair<Payload>, bench: Bench, label: String) throws {
        let (stash, keys) = (pair.stash, pair.keys)
        let order = Array(Fixtures.shuffled(keys.count, seed: 8))
        let samples = try Measure.interleaved(rounds: bench.settings.memoryRounds, [
            { _ in
                try Measure.blocking {
                    let start = ContinuousClock.now
                    for index in order { consume(try await stash.async.object(forKey: keys[index]).id) }
                    return (ContinuousClock.now - start).nanoseconds / Double(order.count)
                }
            },
            { _ in try Measure.nsPerOp(order.count) { for index in order { consume(try stash.object(forKey: keys[index]).id) } } },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "Stash, sync hit", target: .ratio(4)))
        bench.add(Row(label + " (absolute)", stash: samples[0], baseline: samples[1], vs: "Stash, sync hit", target: .absolute(2_000)))
    }
}
