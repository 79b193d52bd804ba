import Foundation
import Stash

/// removeExpiredObjects on a store of `keyCount` Codable entries, every other one already expired,
/// against SQLite's `DELETE FROM kv WHERE expiry < ?` on the same rows (no index on expiry: the
/// table of the issue). One call, timed whole; both sides are filled anew (untimed) every round.
enum ExpiryPeerScenario {
    static func run(bench: Bench, label: String) throws {
        let count = bench.settings.keyCount
        let kind = Kind<Payload>.codable
        let keys = (0..<count).map(Fixtures.key)
        let values = (0..<count).map { kind.value($0, 0) }
        let past = Date(timeIntervalSinceNow: -3_600)
        let expiry = { (index: Int) in index % 2 == 0 ? past : nil }
        let samples = try Measure.interleaved(rounds: bench.settings.expiredRounds, [
            { _ in
                let directory = try bench.freshDirectory("expired-peer-stash")
                defer { try? FileManager.default.removeItem(at: directory) }
                let side = try StashStorageSide(kind, in: directory)
                for index in 0..<count { try side.set(values[index], forKey: keys[index], expiry: expiry(index)) }
                let ns = try Measure.nsPerOp(1) { try side.storage.removeExpiredObjects() }
                guard side.storage.allKeys.count == count / 2 else { throw BenchError("\(label): wrong keys left in Stash") }
                return ns
            },
            { _ in
                let directory = try bench.freshDirectory("expired-peer-sqlite")
                defer { try? FileManager.default.removeItem(at: directory) }
                let side = try SQLiteSide(kind.codec, in: directory, dictionary: false)
                for index in 0..<count { try side.set(values[index], forKey: keys[index], expiry: expiry(index)) }
                let now = Date().timeIntervalSince1970
                let ns = try Measure.nsPerOp(1) { try side.store.removeExpired(now: now) }
                guard try !side.exists(keys[0]), try side.exists(keys[1]) else {
                    throw BenchError("\(label): SQLite removed the wrong rows")
                }
                return ns
            },
        ])
        bench.add(Row(label + " vs SQLite", stash: samples[0], baseline: samples[1], vs: "SQLite", unit: .ns,
                      target: .ratio(0.5)))
    }
}
