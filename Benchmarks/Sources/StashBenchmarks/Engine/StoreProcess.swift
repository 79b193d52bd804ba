import Foundation

/// `StashBenchmarks --store-process …`: the other processes of the multi-process rows, this executable
/// started again by ``ChildProcess``. Everything a child needs (keys, values, the open store) is
/// ready before it says `ready`; then it works only on command.
///
/// - `reader FOLDER COUNT SEED`: opens Stash's store in FOLDER read-only (`DiskConfig(readOnly: true)`,
///   beside the writer that has it open), reads each of its COUNT keys once untimed (warm, as the
///   writer's own reads are), and answers every `get START END` with `ns <ns/op>`: the keys at positions
///   START..<END of the seeded order read, timed. Before the clock starts it reads the batch's first
///   key once, untimed: whatever the writer appended since (its reads' access records) is caught up
///   with there, so the batch itself runs on a store where nothing changed — unless the parent writes
///   meanwhile.
/// - `writer Stash|SQLite FOLDER FIRST COUNT`: opens the store in FOLDER — Stash's with
///   `allowsWritersInOtherProcesses: true`, or SQLite's WAL database with a busy timeout — says
///   `ready`, waits for `go`, writes keys FIRST..<FIRST+COUNT (new keys, in a seeded random order),
///   one write (one transaction) each, answers `done <ns/op>`, and keeps the store open until its
///   input ends.
///
/// The end of its standard input ends it.
enum StoreProcess {
    static let usage = "usage: StashBenchmarks --store-process reader FOLDER COUNT SEED | writer Stash|SQLite FOLDER FIRST COUNT"
    /// SQLite's `busy_timeout` in the two-process rows, in milliseconds: long enough never to fail a write.
    static let sqliteBusyTimeout: Int32 = 5_000

    static func main(_ arguments: [String]) -> Int32 {
        do {
            switch arguments.first {
            case "reader": return try reader(Array(arguments.dropFirst()))
            case "writer": return try writer(Array(arguments.dropFirst()))
            default: return ChildIO.fail(usage)
            }
        } catch {
            return ChildIO.fail("\(arguments.first ?? ""): \(error)")
        }
    }

    private static func reader(_ arguments: [String]) throws -> Int32 {
        guard arguments.count == 3, let count = Int(arguments[1]), count > 0, let seed = UInt64(arguments[2]) else {
            return ChildIO.fail(usage)
        }
        let fixture = EngineFixture(count: count)
        let order = fixture.order(seed: seed)
        let side = try StashEngineSide(in: URL(fileURLWithPath: arguments[0]), fixture, readOnly: true)
        try order.withUnsafeBufferPointer { _ = try side.batch(.get, $0) }
        ChildIO.say("ready")
        while let command = ChildIO.command() {
            guard command.count == 3, command[0] == "get", let start = Int(command[1]), let end = Int(command[2]),
                  0 <= start, start < end, end <= order.count else {
                return ChildIO.fail("reader: not a command: \(command.joined(separator: " "))")
            }
            consume(try side.get(Int(order[start])))
            let ns = try order.withUnsafeBufferPointer { try side.batch(.get, UnsafeBufferPointer(rebasing: $0[start..<end])) }
            ChildIO.say("ns \(ns)")
        }
        return 0
    }

    private static func writer(_ arguments: [String]) throws -> Int32 {
        guard arguments.count == 4, let first = Int(arguments[2]), let count = Int(arguments[3]), first >= 0, count > 0 else {
            return ChildIO.fail(usage)
        }
        let fixture = EngineFixture(count: first + count)
        let folder = URL(fileURLWithPath: arguments[1])
        let side: any EngineSide
        switch arguments[0] {
        case "Stash": side = try StashEngineSide(in: folder, fixture, allowsWritersInOtherProcesses: true)
        case "SQLite": side = try SQLiteEngineSide(in: folder, fixture, busyTimeout: sqliteBusyTimeout)
        default: return ChildIO.fail(usage)
        }
        let order = Fixtures.shuffled(count, seed: UInt64(first)).map { Int32(first + $0) }
        ChildIO.say("ready")
        guard let command = ChildIO.command() else { return 0 }
        guard command == ["go"] else { return ChildIO.fail("writer: not a command: \(command.joined(separator: " "))") }
        let ns = try order.withUnsafeBufferPointer { try side.batch(.set(revision: 0), $0) }
        ChildIO.say("done \(ns)")
        // Open until the parent has every process's answer: a store closed while the other process
        // still writes (Stash writes its key directory then, holding the lock) is not part of the round.
        while ChildIO.command() != nil {}
        return 0
    }
}
