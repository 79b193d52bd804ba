import Foundation
import Stash
import StashTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Read-modify-write across processes and under kills, for Tests/StashTests/Storage/UpdateProcessTests.swift
// and TransactionCrashTests.swift. A user of the public API only.
//
//   increment DIR --count N
//       One of several writer processes (`allowsWritersInOtherProcesses`): N `update`s adding 1 to
//       the `Int` at key `n` (default 0). Prints `done` at the end.
//   move DIR --count N --seed S
//       One of several writer processes: N transactions each moving a seeded amount from key `a` to
//       key `b` or back (both must exist). Prints `done` at the end.
//   sum DIR --total T
//       A read-only process: reads `a` and `b` in one read-only transaction, again and again until the
//       end of stdin, and exits 3 as soon as a + b is not T. Prints `reads COUNT` at the end.
//   transact DIR --keys K --rounds R
//       A sole durable writer: R times, a transaction that reads t0 (a round number R), checks that
//       t0…t(K-1) and `big` (a value in a file of its own) all hold R, and writes R + 1 to all of them.
//       Prints `committed R+1` once each returned. Exits 3 when a transaction reads a mix of rounds.

/// A `Storage<Int>` on the folder DIR, shared with writers in other processes (or read-only).
private func openCounters(_ path: String, readOnly: Bool = false) throws -> Storage<Int> {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    var config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), allowsWritersInOtherProcesses: !readOnly)
    config.readOnly = readOnly
    return try Storage<Int>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: Int.self))
}

func runIncrement(_ path: String, count: Int) throws -> Never {
    let storage = try openCounters(path)
    for _ in 0..<count { try storage.update(forKey: "n", default: 0) { $0 += 1 } }
    emit("done")
    exit(0)
}

func runMove(_ path: String, count: Int, seed: UInt64) throws -> Never {
    let storage = try openCounters(path)
    var random = SeededGenerator(seed: seed)
    for _ in 0..<count {
        let amount = random.below(21) - 10
        try storage.transaction { tx in
            let a = try tx.object(forKey: "a")
            try tx.setObject(a - amount, forKey: "a")
            try tx.update(forKey: "b") { $0 += amount }
        }
    }
    emit("done")
    exit(0)
}

func runSum(_ path: String, total: Int) throws -> Never {
    let storage = try openCounters(path, readOnly: true)
    let ended = Locked(false)
    Thread.detachNewThread {
        _ = try? FileHandle.standardInput.readToEnd()
        ended.withLock { $0 = true }
    }
    emit("ready")
    var reads = 0
    while !ended.withLock({ $0 }) {
        let (a, b) = try storage.transaction { tx in (try tx.object(forKey: "a"), try tx.object(forKey: "b")) }
        if a + b != total { fail("read a = \(a), b = \(b): the sum is \(a + b), not \(total)", status: 3) }
        reads += 1
    }
    emit("reads \(reads)")
    exit(0)
}

/// The value of round `round` for `key`: the round as 8 bytes, then `size` bytes of filler.
func roundValue(_ round: UInt64, size: Int) -> Data {
    withUnsafeBytes(of: round.littleEndian) { Data($0) } + Data(repeating: UInt8(truncatingIfNeeded: round), count: size)
}

/// The round a ``roundValue(_:size:)`` holds.
func round(of data: Data) -> UInt64? {
    guard data.count >= 8 else { return nil }
    return data.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
}

func runTransact(_ path: String, keys: Int, rounds: Int) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), durable: true)
    let storage = try Storage<Data>(diskConfig: config, transformer: TransformerFactory.forData())
    for _ in 0..<rounds {
        let next = try storage.transaction { tx -> UInt64 in
            let current = try round(of: tx.object(forKey: "t0")) ?? 0
            for key in (0..<keys).map({ "t\($0)" }) + ["big"] where try round(of: tx.object(forKey: key)) != current {
                fail("\(key) holds another round than t0's \(current)", status: 3)
            }
            for index in 0..<keys { try tx.setObject(roundValue(current + 1, size: 100), forKey: "t\(index)") }
            try tx.setObject(roundValue(current + 1, size: 300_000), forKey: "big")
            return current + 1
        }
        emit("committed \(next)")
    }
    exit(0)
}

/// The migration `migrate` runs: `old I` becomes `new I`.
func tortureMigrator() -> StorageMigrator<Data> {
    var migrator = StorageMigrator<Data>(batchSize: 10)
    migrator.registerMigration("old to new") { data in
        let text = String(decoding: data, as: UTF8.self)
        guard text.hasPrefix("old ") else { throw CocoaError(.coderReadCorrupt) }
        return Data(("new " + text.dropFirst(4)).utf8)
    }
    return migrator
}

/// `migrate DIR`: runs ``tortureMigrator()`` on the durable store DIR; prints `migrated COUNT` and exits 0.
func runMigrate(_ path: String) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), durable: true)
    let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
    let report = try tortureMigrator().migrate(storage)
    emit("migrated \(report.migrated)")
    exit(0)
}
