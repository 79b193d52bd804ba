import Foundation
import Stash

/// removeObject, and removeExpiredObjects against the unlinks it cannot avoid.
enum RemoveScenarios {
    /// Every key removed, in random order (the last scenario of a pair: it empties both stores).
    static func removeObject<T>(_ pair: Pair<T>, bench: Bench, label: String) throws {
        let (stash, min, keys) = (pair.stash, pair.min, pair.keys)
        let chunks = Fixtures.shuffled(keys.count, seed: 5).chunked(bench.settings.batch)
        let samples = try Measure.interleaved(rounds: chunks.count, [
            { round in try Measure.nsPerOp(chunks[round].count) { for index in chunks[round] { try stash.removeObject(forKey: keys[index]) } } },
            { round in try Measure.nsPerOp(chunks[round].count) { for index in chunks[round] { try min.removeObject(forKey: keys[index]) } } },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store (unlink)"))
    }

    /// A store of `keyCount` entries, every other one already expired; one removeExpiredObjects call,
    /// timed whole, against unlinking the same number of files of the same size. Both sides are
    /// set up anew (untimed) every round.
    static func removeExpired(bench: Bench, label: String) throws {
        let count = bench.settings.keyCount
        let kind = Kind<Payload>.codable
        let keys = (0..<count).map(Fixtures.key)
        let values = (0..<count).map { kind.value($0, 0) }
        let encoded = try values.map(kind.codec.encode)
        let past = Date(timeIntervalSinceNow: -3_600)
        let samples = try Measure.interleaved(rounds: bench.settings.expiredRounds, [
            { _ in
                let directory = try bench.freshDirectory("expired-stash")
                defer { try? FileManager.default.removeItem(at: directory) }
                let storage = try Pair<Payload>.openStash(kind, in: directory)
                for index in 0..<count {
                    try storage.setObject(values[index], forKey: keys[index], expiry: index % 2 == 0 ? .date(past) : .never)
                }
                let ns = try Measure.nsPerOp(1) { try storage.removeExpiredObjects() }
                guard storage.allKeys.count == count - (count + 1) / 2 else { throw BenchError("\(label): wrong keys left") }
                return ns
            },
            { _ in
                let directory = try bench.freshDirectory("expired-unlink")
                defer { try? FileManager.default.removeItem(at: directory) }
                let paths = keys.map { directory.path + "/" + $0 }
                for index in 0..<count {
                    try RawFile.writeAtomically(encoded[index], to: paths[index], temporary: paths[index] + ".tmp")
                }
                let expired = stride(from: 0, to: count, by: 2).map { paths[$0] }
                return try Measure.nsPerOp(1) { for path in expired { try RawFile.remove(path) } }
            },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "unlink × \((count + 1) / 2)",
                      unit: .ns, target: .ratio(1.5)))
    }
}
