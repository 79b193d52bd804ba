import Foundation
import Stash

/// Listing a key namespace (`user.0001…`: 100 keys) in a store of `count` entries: Stash's
/// `allKeys(withPrefix:)` against SQLite's range scan over its primary key (the peer a user would
/// pick) and against `allKeys` then a filter (what users wrote before prefix listing existed).
enum PrefixScenarios {
    static let prefix = "user.0001"

    static func labels(_ count: Int) -> (sqlite: String, filter: String) {
        let base = "prefix listing (100 keys), \(count) entries"
        return ("\(base) vs SQLite", "\(base) vs allKeys + filter")
    }

    static func wanted(_ bench: Bench, _ count: Int) -> Bool {
        let labels = labels(count)
        return bench.settings.wants(labels.sqlite) || bench.settings.wants(labels.filter)
    }

    static func run(bench: Bench, count: Int, folders: EngineScaleScenarios.Folders) throws {
        let labels = labels(count)
        let stash = try folders.openStash()
        let sqlite = try SQLiteSide(Codec<Data>.identity, in: folders.peer("SQLite"), dictionary: false).store
        // Every engine must agree before anything is timed.
        let expected = (100..<200).map(Fixtures.key)
        guard Set(stash.allKeys(withPrefix: prefix)) == Set(expected),
              try Set(sqlite.keys(withASCIIPrefix: prefix)) == Set(expected) else {
            throw BenchError("prefix listing: the engines disagree on the keys under \(prefix)")
        }
        let rounds = count >= 1_000_000 ? 5 : 15
        let samples = try Measure.interleaved(rounds: rounds, [
            { _ in Measure.nsPerOp(1) { consume(stash.allKeys(withPrefix: prefix).count) } },
            { _ in try Measure.nsPerOp(1) { consume(try sqlite.keys(withASCIIPrefix: prefix).count) } },
            { _ in Measure.nsPerOp(1) { consume(stash.allKeys.filter { $0.hasPrefix(prefix) }.count) } },
        ])
        bench.add(Row(labels.sqlite, stash: samples[0], baseline: samples[1], vs: "SQLite", unit: .ns))
        bench.add(Row(labels.filter, stash: samples[0], baseline: samples[2], vs: "allKeys + filter", unit: .ns))
    }
}
