import Foundation
import Testing
import Stash
@testable import StashTorture // TortureValue and hexKey: the values and key spelling of `StashTorture attack`
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Attacks on writers in several processes (`DiskConfig.allowsWritersInOtherProcesses`, Contract item
// 11), by the classes of Docs (/work/shared/ATTACKS.md): files not current, the folder's life, process
// boundaries (kills at exact system calls through strace), key identity, limits, expiry, batches, the
// memory layer, the async API, closing. The other process is `StashTorture attack` (Sources/StashTorture/
// SharedAttack.swift), driven line by line. Tests named "held: …" found no defect and stay as cover.

@Suite("Writers in several processes: attacks", .serialized)
struct SharedWriterAttackTests {
    // MARK: Files not current

    @Test("stash-shared deleted while a writer process has the store open: a writer that opens after it and the one open before see each other's writes")
    func sharedFileDeleted() throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("a", 1), forKey: "a")
        try FileManager.default.removeItem(atPath: folder.storePath() + "/stash-shared")
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        #expect(other.ask("set \(hexKey("k")) 10") == "wrote \(hexKey("k")) 1000000001")
        #expect(sequence(try? storage.object(forKey: "k"), "k") == 1_000_000_001, "this process missed the other's write")
        try storage.setObject(value("b", 2), forKey: "b")
        #expect(other.ask("get \(hexKey("b"))") == "got \(hexKey("b")) 2", "the other process missed this one's write")
        #expect(other.ask("set \(hexKey("c")) 10") == "wrote \(hexKey("c")) 1000000002")
        try storage.setObject(value("d", 3), forKey: "d")
        other.closeInput()
        #expect(other.wait(upTo: 30) && other.status == 0, "\(other.errors)")
        let final = try finalState(folder, releasing: storage)
        #expect(final.wrong.isEmpty, "damaged values: \(final.wrong)")
        #expect(final.sequences == ["a": 1, "b": 2, "d": 3, "k": 1_000_000_001, "c": 1_000_000_002], "\(final.sequences)")
    }

    @Test("stash-shared replaced by a FIFO while a writer process has the store open: a new writer is refused, the open one refuses writes it could not publish, and both go on once it is removed")
    func sharedFileReplacedByFIFO() throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("a", 1), forKey: "a")
        let sharedPath = folder.storePath() + "/stash-shared"
        try FileManager.default.removeItem(atPath: sharedPath)
        #expect(mkfifo(sharedPath, 0o644) == 0)
        let refused = try ChildProcess.run(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "1"], deadline: 30)
        #expect(refused.status == 1 && refused.stderr.contains("not a regular file"), "\(refused.status) \(refused.stderr)")
        // A write no other process could learn of (readers would never see it) is refused too.
        #expect(throws: StorageError.self) { try storage.setObject(value("b", 2), forKey: "b") }
        try FileManager.default.removeItem(atPath: sharedPath)
        try storage.setObject(value("b", 2), forKey: "b")
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        #expect(other.ask("get \(hexKey("b"))") == "got \(hexKey("b")) 2")
        #expect(other.ask("set \(hexKey("c")) 10") == "wrote \(hexKey("c")) 1000000001")
        #expect(sequence(try? storage.object(forKey: "c"), "c") == 1_000_000_001)
    }

    // MARK: Value files and removeAll

    @Test("removeAll in one process deletes its old value files after its call returned, while a third process opens and writes a large value under a freed number: that value survives",
          .enabled(if: Strace.isAvailable))
    func removeAllDeletionsSpareAnotherProcessesFile() throws {
        let folder = TemporaryDirectory()
        // The clearing process's unlinks take 700 ms each, so its deletions after the call run long.
        let clearer = try attacker(folder, tag: 1, strace: ["-f", "-qq", "-o", "/dev/null", "-e", "trace=unlink,unlinkat",
                                                            "-e", "inject=unlink,unlinkat:delay_enter=700000"])
        defer { clearer.end() }
        #expect(clearer.ask("set \(hexKey("big1")) 300000").hasPrefix("wrote"))
        #expect(clearer.ask("set \(hexKey("big2")) 300000").hasPrefix("wrote"))
        #expect(clearer.ask("clear") == "cleared")
        // A second process opens meanwhile: the old value files are orphans to it; it removes them.
        let opener = try attacker(folder, tag: 2)
        opener.closeInput()
        #expect(opener.wait(upTo: 30) && opener.status == 0, "\(opener.errors)")
        // This process opens after that: no value file is left, and it writes one.
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("mine", 7, size: 300_000), forKey: "mine")
        clearer.closeInput() // its close waits for its deletions
        #expect(clearer.wait(upTo: 60), "\(clearer.errors)")
        #expect(sequence(try? storage.object(forKey: "mine"), "mine") == 7, "the clearing process deleted this process's value file")
        withExtendedLifetime(storage) {}
    }

    @Test("stash check and a read-only storage opened while a writer process deletes what its removeAll emptied (inside the call, holding the lock): no damage reported",
          .enabled(if: Strace.isAvailable))
    func readerDuringRemoveAllDeletions() throws {
        let folder = TemporaryDirectory()
        let clearer = try attacker(folder, tag: 1, strace: ["-f", "-qq", "-o", "/dev/null", "-e", "trace=unlink,unlinkat",
                                                            "-e", "inject=unlink,unlinkat:delay_enter=2000000"])
        defer { clearer.end() }
        #expect(clearer.ask("fill k 50 100").hasPrefix("filled"))
        // A writer that keeps the store to itself comes and goes between two calls.
        let sole = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath()], input: Data("set s 5\n".utf8))
        #expect(sole.status == 0, "\(sole.stderr)")
        clearer.send("clear\n") // its old segments are deleted inside the call, slowly
        let oldSegment = folder.storePath() + "/00000001.segment"
        let deadline = Date().addingTimeInterval(60)
        while try StoreFiles(folder.storePath()).segments.count < 2, Date() < deadline { usleep(1_000) } // the call has begun
        #expect(FileManager.default.fileExists(atPath: oldSegment), "the old segment went before the reader opened")
        let check = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "check"])
        #expect(check.status == 0 && check.output.contains("no damage found"), "\(check.status) \(check.output) \(check.stderr)")
        var config = folder.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        #expect(reader.recoveryIssues.isEmpty, "\(reader.recoveryIssues)")
        #expect(FileManager.default.fileExists(atPath: oldSegment), "the deletions ended before the readers opened: the test proved nothing")
        #expect(clearer.readLine() == "cleared")
        #expect(!FileManager.default.fileExists(atPath: oldSegment), "the old segment is still there once removeAll returned")
        #expect(clearer.ask("set \(hexKey("new")) 10") == "wrote \(hexKey("new")) 1000000051")
        #expect(reader.allKeys == ["new"])
    }

    // MARK: Kills at exact system calls

    @Test("held: a writer process killed inside a compaction (its output's fsync, the folder's, the removal of an input): the other process reopens the store from its files, nothing acknowledged is lost",
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

    @Test("held: a writer process killed inside the key directory write of its close (the file's fsync, its rename), or closing normally: the other process goes on with thousands of operations and every value reads back",
          .enabled(if: Strace.isAvailable), arguments: [("fsync", 1), ("?rename,renameat,renameat2", 1), ("", 0)])
    func killInsideDirectoryWriteAtClose(syscall: String, occurrence: Int) throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("mine", 1), forKey: "mine")
        let command = occurrence == 0 ? [] : Array(Strace.arguments(killAt: syscall, occurrence: occurrence, command: []).dropLast())
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

    @Test("held: 15 kills of a process writing batches at random moments, beside another writer: every key of a batch reads the same batch, the last acknowledged or a later one")
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
            _ = child.waitForOutput(containing: "batched", upTo: 30)
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

    // MARK: Key identity

    @Test("held: canonically equivalent keys across processes: a key written in NFC by one process is read, overwritten and removed in NFD by the other, through replay, reopen and a large value")
    func canonicallyEquivalentKeys() throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        let pairs = [("caf\u{E9}", "cafe\u{301}"), ("\u{D55C}", "\u{1112}\u{1161}\u{11AB}"), ("\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m")]
        for (number, (nfc, nfd)) in pairs.enumerated() {
            try storage.setObject(value(nfc, UInt64(number + 1), size: number == 0 ? 300_000 : 100), forKey: nfc)
            #expect(other.ask("get \(hexKey(nfd))") == "got \(hexKey(nfd)) \(number + 1)", "the other process missed \(nfc) under \(Array(nfd.unicodeScalars))")
            let wrote = other.ask("set \(hexKey(nfd)) 50")
            let written = try #require(wrote.split(separator: " ").last.flatMap { UInt64($0) }, "\(wrote)")
            // The value names the key it was written under (NFD bytes): this process reads it under NFC.
            let read = try storage.object(forKey: nfc)
            #expect(TortureValue.sequence(of: read, key: nfd) == written, "\(nfc) did not read the other's overwrite")
        }
        #expect(storage.allKeys.count == pairs.count, "\(storage.allKeys.map { Array($0.unicodeScalars) })")
        #expect(other.ask("clear") == "cleared") // this process opens the store anew from its files
        try storage.setObject(value(pairs[0].0, 10), forKey: pairs[0].0)
        #expect(other.ask("remove \(hexKey(pairs[0].1))") == "removed \(hexKey(pairs[0].1))")
        #expect(throws: StorageError.notFound) { try storage.object(forKey: pairs[0].0) }
        #expect(storage.allKeys.isEmpty)
    }

    // MARK: Limits and expiry

    @Test("held: a process with maxSize trims values another process without one wrote; both then agree on what is left")
    func trimmingBesideAnotherWriter() throws {
        let folder = TemporaryDirectory()
        var config = folder.diskConfig(sharedWriters: true)
        config.maxSize = 200_000
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        for index in 0..<20 { #expect(other.ask("set \(hexKey("o\(index)")) 50000").hasPrefix("wrote")) }
        #expect(other.ask("count") == "count 20")
        try storage.setObject(value("mine", 1, size: 50_000), forKey: "mine")
        #expect(storage.totalSize <= 200_000)
        let left = Set(storage.allKeys)
        #expect(left.contains("mine") && left.count <= 4, "\(left)")
        #expect(other.ask("count") == "count \(left.count)")
        for index in 0..<20 {
            let key = "o\(index)"
            #expect(other.ask("get \(hexKey(key))").hasSuffix(left.contains(key) ? "\(1_000_000_001 + index)" : "missing"))
        }
    }

    @Test("held: removeExpiredObjects in one process removes what another process wrote to expire, and keeps the rest")
    func expiryAcrossProcesses() throws {
        let folder = TemporaryDirectory()
        let later = Date().addingTimeInterval(7_200)
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData(), now: { later })
        let other = try attacker(folder, tag: 1)
        defer { other.end() }
        #expect(other.ask("expiring \(hexKey("soon")) 10 3600").hasPrefix("wrote"))
        #expect(other.ask("expiring \(hexKey("soonbig")) 300000 3600").hasPrefix("wrote"))
        #expect(other.ask("set \(hexKey("never")) 10").hasPrefix("wrote"))
        #expect(try storage.isExpiredObject(forKey: "soon"))
        try storage.removeExpiredObjects()
        #expect(Set(storage.allKeys) == ["never"])
        #expect(other.ask("get \(hexKey("soon"))") == "got \(hexKey("soon")) missing")
        #expect(other.ask("get \(hexKey("soonbig"))") == "got \(hexKey("soonbig")) missing")
        #expect(other.ask("count") == "count 1")
    }

    // MARK: Memory, async, closing

    @Test("held: the async API and the memory layer of a Storage see another process's overwrites, large values and removals")
    func asyncAndMemoryAcrossProcesses() async throws {
        let folder = TemporaryDirectory()
        let storage = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 100), transformer: TransformerFactory.forData())
        let other = try attacker(folder, tag: 1, extra: ["--memory"])
        defer { other.end() }
        for step in 1...60 {
            let key = "k\(step % 5)"
            try await storage.async.setObject(value(key, UInt64(step)), forKey: key)
            #expect(sequence(try await storage.async.object(forKey: key), key) == UInt64(step)) // now in memory
            #expect(other.ask("get \(hexKey(key))") == "got \(hexKey(key)) \(step)")
            if step % 4 == 0 {
                #expect(other.ask("remove \(hexKey(key))") == "removed \(hexKey(key))")
                #expect(try await storage.async.existsObject(forKey: key) == false, "step \(step): memory kept a removed \(key)")
                continue
            }
            let answer = other.ask("set \(hexKey(key)) \(step % 10 == 0 ? 300_000 : 100)")
            let written = try #require(answer.split(separator: " ").last.flatMap { UInt64($0) }, "\(answer)")
            #expect(sequence(try await storage.async.object(forKey: key), key) == written, "step \(step): a stale \(key)")
            #expect(sequence(try storage.entry(forKey: key).object, key) == written)
        }
    }

    @Test("held: a process opens, writes and closes its storage 40 times while another process writes without pause: no call fails, every value is whole")
    func closingWhileTheOtherWrites() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let writer = try ChildProcess(try executable("StashTorture"), ["share", store, "--seed", "3", "--tag", "1", "--private", "a"], input: .held)
        let watchdog = Watchdog(writer, seconds: 180)
        defer { watchdog.cancel() }
        try #require(writer.waitForOutput(), "\(writer.errors)")
        for round in 1...40 {
            let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            try storage.setObject(value("mine\(round % 4)", UInt64(round), size: round % 10 == 0 ? 300_000 : 200), forKey: "mine\(round % 4)")
            #expect(sequence(try? storage.object(forKey: "mine\(round % 4)"), "mine\(round % 4)") == UInt64(round))
            _ = storage.allKeys
        }
        writer.closeInput()
        #expect(writer.wait(upTo: 60) && writer.status == 0, "\(writer.errors)")
        let final = try finalState(folder, releasing: nil)
        #expect(final.wrong.isEmpty, "\(final.wrong)")
        for index in 0..<4 { #expect(final.sequences["mine\(index)"] == UInt64(36 + (index == 0 ? 4 : index))) }
    }

    // MARK: Helpers

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }

    /// A self-verifying value of `key` with sequence number `sequence` (as `StashTorture` writes them).
    private func value(_ key: String, _ sequence: UInt64, size: Int = 64) -> Data {
        TortureValue.make(key: key, sequence: sequence, payloadCount: size)
    }

    private func sequence(_ data: Data?, _ key: String) -> UInt64? {
        data.flatMap { TortureValue.sequence(of: $0, key: key) }
    }

    /// `StashTorture attack` on the test's store, opened (it printed `ready`); under strace when given
    /// its arguments (up to the `--`).
    private func attacker(_ folder: TemporaryDirectory, tag: UInt64, extra: [String] = [], strace: [String]? = nil) throws -> Attacker {
        let command = [try executable("StashTorture").path, "attack", folder.storePath(), "--tag", "\(tag)"] + extra
        let child: ChildProcess
        if let strace {
            guard let executable = Strace.executable else { throw StraceMissing() }
            child = try ChildProcess(executable, strace + ["--"] + command, input: .held)
        } else {
            child = try ChildProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), input: .held)
        }
        let ready = child.readLine()
        try #require(ready == "ready", "the other writer did not open: \(ready) \(child.errors)")
        return Attacker(child: child, watchdog: Watchdog(child, seconds: 180))
    }

    /// The last sequence each key was written with, from `wrote HEX SEQ` lines.
    private func lastWrites(_ lines: [Substring]) -> [String: UInt64] {
        var last: [String: UInt64] = [:]
        for line in lines {
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "wrote", let sequence = UInt64(words[2]) else { continue }
            let bytes = stride(from: 0, to: words[1].count, by: 2).compactMap { offset -> UInt8? in
                let start = words[1].index(words[1].startIndex, offsetBy: offset)
                return UInt8(words[1][start..<words[1].index(start, offsetBy: 2)], radix: 16)
            }
            last[String(decoding: bytes, as: UTF8.self)] = sequence
        }
        return last
    }

    /// Every key's sequence in the store, read by a storage opened anew once `storage` is released.
    private func finalState(_ folder: TemporaryDirectory, releasing storage: DiskStorage<Data>?) throws -> (sequences: [String: UInt64], wrong: [String]) {
        var storage = storage
        storage = nil
        withExtendedLifetime(storage) {}
        let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        var sequences: [String: UInt64] = [:]
        var wrong: [String] = []
        for key in disk.allKeys {
            if let found = sequence(try? disk.object(forKey: key), key) { sequences[key] = found } else { wrong.append(key) }
        }
        return (sequences, wrong)
    }
}

/// A `StashTorture attack` child with its watchdog.
private struct Attacker {
    let child: ChildProcess
    let watchdog: Watchdog

    func ask(_ line: String) -> String { child.ask(line) }
    func send(_ text: String) { child.send(text) }
    func readLine() -> String { child.readLine() }
    func closeInput() { child.closeInput() }
    func wait(upTo seconds: TimeInterval) -> Bool { child.wait(upTo: seconds) }
    func waitUntilExit() { child.waitUntilExit() }
    func lines() -> [Substring] { child.lines() }
    var status: Int32 { child.status }
    var errors: String { child.errors }
    var wasKilled: Bool { child.wasKilled }
    func kill() { child.kill() }
    func waitForOutput(containing text: String, upTo seconds: TimeInterval) -> Bool { child.waitForOutput(containing: text, upTo: seconds) }

    /// Ends the child (its input closed; killed if it does not exit) and its watchdog.
    func end() {
        child.closeInput()
        if !child.wait(upTo: 30) { Issue.record("the other writer did not exit: \(child.errors)") }
        watchdog.cancel()
    }
}

private struct StraceMissing: Error {}
