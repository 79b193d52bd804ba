import Foundation
import Testing
import Stash
@testable import StashTorture // hexKey: the key spelling of `StashTorture attack`
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A writer process killed inside a compaction, inside the key directory write of its close, or at
/// random moments while it writes batches: the other process goes on, and nothing acknowledged is lost.
@Suite("Writers in several processes: one killed at exact system calls", .serialized)
struct SharedWriterKillTests: OtherWriterScenario {
    @Test("a writer process killed inside a compaction (its output's fsync, the folder's, the removal of an input): the other process reopens the store from its files, nothing acknowledged is lost",
          .enabled(if: Strace.isAvailable), arguments: [("fsync", 1), ("fsync", 2), ("?unlink,unlinkat", 2)])
    func killInsideCompaction(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        for index in 0..<50 { try storage.setObject(value("m\(index)", UInt64(index + 1)), forKey: "m\(index)") }
        // No fsync before a compaction: the store exists (no marker written), writes are not durable.
        let child = try attacker(folder, tag: 1, strace: Array(Strace.arguments(killAt: syscall, occurrence: occurrence, command: []).dropLast()))
        defer { child.watchdog.cancel() }
        child.send("churn c 8 3000 4000\n")
        child.waitUntilExit()
        #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        let acknowledged = lastWrites(child.lines())
        #expect(acknowledged.values.count == 8 && child.lines().count > 900,
                "killed after \(child.lines().count) writes: before any compaction could start")
        for index in 0..<50 { #expect(sequence(try? storage.object(forKey: "m\(index)"), "m\(index)") == UInt64(index + 1)) }
        for (key, last) in acknowledged {
            let found = sequence(try? storage.object(forKey: key), key)
            #expect(found.map { $0 >= last } == true, "\(key): acknowledged #\(last), found \(found.map(String.init) ?? "nothing")")
        }
        try storage.setObject(value("after", 99), forKey: "after")
        let final = try finalState(folder, releasing: storage)
        #expect(final.wrong.isEmpty, "damaged values: \(final.wrong)")
        #expect(final.sequences.count == 59)
    }

    @Test("a writer process killed inside the key directory write of its close (while its file is written, its rename), or closing normally: the other process goes on with thousands of operations and every value reads back",
          .enabled(if: Strace.isAvailable), arguments: [(Strace.writes, 1), ("?rename,renameat,renameat2", 1), ("", 0)])
    func killInsideDirectoryWriteAtClose(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("mine", 1), forKey: "mine")
        let command = occurrence == 0 ? [] : Array(Strace.arguments(killAt: syscall, occurrence: occurrence, onlyOn: killTarget(syscall, store: folder.storePath()),
                                                                    command: []).dropLast())
        let child = try attacker(folder, tag: 1, strace: command.isEmpty ? nil : command)
        defer { child.watchdog.cancel() }
        let count = 20_500 // enough entries for a key directory at close
        let filled = child.ask("fill s \(count) 16")
        let first = try #require(filled.split(separator: " ").last.flatMap { UInt64($0) }, "\(filled) \(child.errors)")
        child.closeInput() // its close writes the key directory
        child.waitUntilExit()
        if occurrence == 0 {
            #expect(child.status == 0, "\(child.errors)")
            #expect(FileManager.default.fileExists(atPath: folder.storePath() + "/key-directory"), "no key directory was written at close")
        } else {
            #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        }
        var expected = Dictionary(uniqueKeysWithValues: (0..<count).map { ("s\($0)", first + UInt64($0)) })
        expected["mine"] = 1
        // Many operations at the store as the close left it.
        var random = SeededGenerator(seed: UInt64(occurrence) + 5)
        for step in 0..<3_000 {
            let key = "s\(random.below(count))"
            switch random.below(3) {
            case 0:
                try storage.setObject(value(key, 10_000 + UInt64(step)), forKey: key)
                expected[key] = 10_000 + UInt64(step)
            case 1:
                try storage.removeObject(forKey: key)
                expected[key] = nil
            default:
                #expect(sequence(try? storage.object(forKey: key), key) == expected[key], "step \(step): \(key)")
            }
        }
        let final = try finalState(folder, releasing: storage)
        #expect(final.wrong.isEmpty, "damaged values: \(final.wrong.prefix(5))")
        #expect(final.sequences == expected, "\(final.sequences.count) keys, \(expected.count) expected")
    }

    @Test("15 kills of a process writing batches at random moments, beside another writer: every key of a batch reads the same batch, the last acknowledged or a later one")
    func killsWhileWritingBatches() throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        let keys = (0..<6).map { "b\($0)" }
        var random = SeededGenerator(seed: 99)
        var acknowledged: UInt64 = 0
        for round in 1...15 {
            try storage.setObject(value("own\(round % 3)", UInt64(round)), forKey: "own\(round % 3)")
            let child = try attacker(folder, tag: UInt64(round))
            defer { child.watchdog.cancel() }
            // One batch in six holds a value large enough for a file of its own.
            child.send("batches 100000 \(random.below(6) == 0 ? 300_000 : 500) " + keys.map(hexKey).joined(separator: " ") + "\n")
            _ = child.waitForOutput(containing: "batched", upTo: TestDeadline.long)
            usleep(UInt32(random.below(20_000)))
            child.kill()
            let batches = child.lines().compactMap { $0.hasPrefix("batched ") ? UInt64($0.dropFirst(8)) : nil }
            acknowledged = batches.last ?? acknowledged
            let found = keys.map { sequence(try? storage.object(forKey: $0), $0) }
            #expect(Set(found).count == 1, "round \(round): a mix of batches \(found)")
            #expect((found.first ?? nil).map { $0 >= acknowledged } == true, "round \(round): acknowledged #\(acknowledged), found \(found)")
        }
        let final = try finalState(folder, releasing: storage)
        #expect(final.wrong.isEmpty)
    }
}
