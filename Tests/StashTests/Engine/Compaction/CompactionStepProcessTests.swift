#if DEBUG // the children lower the engine's thresholds through a testable import (debug builds only)
import Foundation
import Testing
import Stash
import StashTestSupport

// A shared writer's compaction in bounded steps, across processes (`StashTorture compact-steps`,
// Tests/StashTorture/CompactionSteps.swift: a step copies at most 4,096 bytes there): writers and a
// reader beside the steps, and kills at the system calls of a step (`strace -e inject`).

@Suite("A shared writer's compaction in steps, across processes", .serialized)
struct CompactionStepProcessTests {
    static let step = 4_096

    @Test("two writer processes and a reader process read right values while compactions run in steps")
    func writersAndReaderBesideSteps() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        _ = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData()) // the store exists for the reader
        let torture = try torture()
        let reader = try ChildProcess(torture, ["compact-steps", "reader", store], input: .held)
        let writers = try (1...2).map { tag in try ChildProcess(torture, ["compact-steps", "writer", store, "--tag", "\(tag)", "--ops", "1500"]) }
        let watchdogs = (writers + [reader]).map { Watchdog($0, seconds: 240) }
        defer { watchdogs.forEach { $0.cancel() } }
        for writer in writers {
            writer.waitUntilExit()
            #expect(writer.status == 0, "\(writer.errors)")
            let counters = try #require(writer.lines().last.map(Counters.init) ?? nil, "\(writer.text())")
            #expect(counters.steps > 0 && counters.drained > 0, "\(counters)")
            #expect(counters.copied <= Self.step, "a step copied \(counters.copied) bytes")
        }
        reader.closeInput()
        reader.waitUntilExit()
        #expect(reader.status == 0, "\(reader.errors)")
        let reads = reader.lines().last.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
        #expect(reads > 0, "the reader read nothing: \(reader.text())")
    }

    @Test("a kill at a pwrite, fsync, rename or unlink of a step loses nothing, and the store compacts on after it",
          .enabled(if: Strace.isAvailable),
          // Numbered as the seeded run makes them. First write: pwrite64 #1 its record, #2 the header of the
          // segment a cycle starts with, #3 the output's header, #4 the copies, fsync #1 the output, #5 the
          // header of the segment above it, rename #1 the output published, fsync #2 the folder, #6 the
          // header of the segment whose floor supersedes the drained ones, unlink #1 the segment of #5
          // (empty), #2–#4 the drained segments. Second write: pwrite64 #7 its record, #8 the output's
          // header, #9 the copies, #10 the next segment's header, fsync #3 and #4, rename #2.
          arguments: [("pwrite64", 2), ("pwrite64", 3), ("pwrite64", 4), ("pwrite64", 5), ("pwrite64", 6),
                      ("pwrite64", 8), ("pwrite64", 9), ("pwrite64", 10), ("fsync", 1), ("fsync", 2), ("fsync", 3), ("fsync", 4),
                      ("?rename,renameat,renameat2", 1), ("?rename,renameat,renameat2", 2),
                      ("?unlink,unlinkat", 1), ("?unlink,unlinkat", 2), ("?unlink,unlinkat", 3), ("?unlink,unlinkat", 4)])
    func killedStep(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let torture = try torture()
        let seed = try ChildProcess.run(torture, ["compact-steps", "seed", store])
        try #require(seed.status == 0, "\(seed.stderr)")
        let child = try ChildProcess(try strace(), Strace.arguments(killAt: syscall, occurrence: occurrence, command:
            [torture.path, "compact-steps", "run", store, "--rounds", "40"]))
        let watchdog = Watchdog(child, seconds: 120)
        defer { watchdog.cancel() }
        try #require(child.wait(upTo: 120), "the child never reached \(syscall) #\(occurrence)")
        #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        // Inside a step of the first or second write, as numbered above.
        #expect(child.lines().filter { $0.hasPrefix("set ") }.count <= 1, "killed after \(child.lines().count) writes")
        var acknowledged: [String: UInt64] = [:]
        for line in child.lines() {
            let words = line.split(separator: " ")
            if words.count == 3, words[0] == "set", let sequence = UInt64(words[2]) { acknowledged[String(words[1])] = sequence }
        }
        let held = try sequences(store)
        for key in (0..<16).map({ "k\($0)" }) {
            let floor = acknowledged[key] ?? 10 // the seed's last round
            let found = held[key] ?? nil
            #expect(found == floor || found == floor + 1, "\(key) holds #\(found.map(String.init) ?? "nothing"), acknowledged #\(floor), killed at \(syscall) #\(occurrence)")
        }
        // After the kill: the store opens, compacts on, and ends with the last round in every key.
        let again = try ChildProcess.run(torture, ["compact-steps", "run", store, "--rounds", "15"])
        #expect(again.status == 0, "\(again.stderr)")
        let counters = again.output.split(separator: "\n").last.flatMap { Counters($0) }
        #expect((counters?.steps ?? 0) > 0 && (counters?.copied ?? .max) <= Self.step, "\(again.output.suffix(200))")
        let final = try sequences(store)
        for key in (0..<16).map({ "k\($0)" }) { #expect(final[key] == 25, "\(key) after the run that followed the kill") }
        print("crash: step killed at \(syscall.split(separator: ",").first!.trimmingCharacters(in: ["?"])) #\(occurrence) after \(child.lines().count) acknowledged writes")
    }

    /// The sequence each key holds (nil: missing or not a complete value of it), read by a new process.
    private func sequences(_ store: String) throws -> [String: UInt64?] {
        let verify = try ChildProcess.run(try torture(), ["compact-steps", "verify", store])
        try #require(verify.status == 0, "\(verify.stderr)")
        var held: [String: UInt64?] = [:]
        for line in verify.output.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 2 { held[String(words[0])] = UInt64(words[1]) }
        }
        return held
    }

    /// A child's `steps S copied C read R drained D` line.
    struct Counters: CustomStringConvertible {
        var steps = 0, copied = 0, read = 0, drained = 0

        init?(_ line: Substring) {
            let words = line.split(separator: " ")
            guard words.count == 8, words[0] == "steps", let steps = Int(words[1]), let copied = Int(words[3]),
                  let read = Int(words[5]), let drained = Int(words[7]) else { return nil }
            (self.steps, self.copied, self.read, self.drained) = (steps, copied, read, drained)
        }

        var description: String { "steps \(steps), largest copy \(copied), largest read \(read), drained \(drained)" }
    }

    private func torture() throws -> URL {
        try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
    }

    private func strace() throws -> URL {
        try #require(Strace.executable, "strace is needed (STASH_REQUIRE_STRACE is set): apt-get install strace")
    }
}
#endif
