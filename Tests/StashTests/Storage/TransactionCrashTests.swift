import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// A transaction killed at an exact system call (`strace -e inject`): all of it or none of it, after a
// reopen. The child (`StashTorture transact`, Tests/StashTorture/Updates.swift) commits transactions
// of 9 keys (one a value in a file of its own), durable, one after another.

@Suite("Transactions killed at every system call", .serialized)
struct TransactionCrashTests {
    static let keys = 8

    // No rename: a transaction's value files are written under fresh names and never renamed.
    @Test("a transaction killed at a pwrite or fsync: every key holds one round, the last acknowledged or the next",
          .enabled(if: Strace.isAvailable),
          arguments: [("pwrite64", 1), ("pwrite64", 2), ("pwrite64", 3), ("pwrite64", 4), ("pwrite64", 7),
                      ("fsync", 1), ("fsync", 2), ("fsync", 3), ("fsync", 4), ("fsync", 6)])
    func killedTransaction(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        try seed(folder)
        // A kill at a `pwrite` needs `pwrite` appends (through a mapping, an append makes no system call).
        let appends = syscall.hasPrefix("pwrite") ? ["--pwrite-appends"] : []
        let child = try ChildProcess(try strace(), Strace.arguments(killAt: syscall, occurrence: occurrence, command:
            [try torture().path, "transact", store, "--keys", "\(Self.keys)", "--rounds", "50"] + appends))
        let watchdog = Watchdog(child, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        try #require(child.wait(upTo: TestDeadline.long), "the child never reached \(syscall) #\(occurrence)")
        #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        let acknowledged = child.lines().compactMap { $0.split(separator: " ").last.flatMap { UInt64($0) } }.last ?? 0
        let rounds = try roundsStored(folder)
        #expect(Set(rounds.values).count == 1, "a mix of rounds after a kill at \(syscall) #\(occurrence): \(rounds)")
        let round = rounds.values.first ?? 0
        #expect(round == acknowledged || round == acknowledged + 1, "round \(round), acknowledged \(acknowledged)")
        print("crash: transaction killed at \(syscall.split(separator: ",").first!.trimmingCharacters(in: ["?"])) #\(occurrence): round \(round), acknowledged \(acknowledged)")
    }

    /// Round 0 in every key, written by this process and closed again.
    private func seed(_ folder: TemporaryDirectory) throws {
        let storage = try Storage<Data>(diskConfig: folder.diskConfig(), transformer: TransformerFactory.forData())
        var batch = StorageBatch<Data>()
        for index in 0..<Self.keys { batch.setObject(value(round: 0, size: 100), forKey: "t\(index)") }
        batch.setObject(value(round: 0, size: 300_000), forKey: "big")
        try storage.write(batch)
    }

    /// The round each key holds, read by a new storage (as a restarted app would).
    private func roundsStored(_ folder: TemporaryDirectory) throws -> [String: UInt64] {
        let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        var rounds: [String: UInt64] = [:]
        for key in (0..<Self.keys).map({ "t\($0)" }) + ["big"] {
            let data = try storage.object(forKey: key)
            rounds[key] = data.prefix(8).enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
        }
        return rounds
    }

    private func value(round: UInt64, size: Int) -> Data {
        withUnsafeBytes(of: round.littleEndian) { Data($0) } + Data(repeating: UInt8(truncatingIfNeeded: round), count: size)
    }

    private func torture() throws -> URL {
        try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
    }

    private func strace() throws -> URL {
        try #require(Strace.executable, "strace is needed (STASH_REQUIRE_STRACE is set): apt-get install strace")
    }
}
