import Foundation
import Testing
import Stash
import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Contract item 11, readers in other processes: a store opened read-only reads while a writer in
// another process is active (and a writer opens while readers are open); before each operation a
// reader catches up through the shared file (`stash-shared`), so it sees every write that returned
// before its read began, and a partial record at the tail is a write in progress, never damage.
// Every test is bounded in steps and in time (a watchdog kills a child that stops answering).

@Suite("Readers in other processes", .serialized)
struct ReaderProcessTests {
    @Test("a read-only storage sees each write, removal and removeAll of a writer process once it returned, memory layer included")
    func readerSeesEveryReturnedWrite() throws {
        let folder = TemporaryDirectory()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig()
        config.readOnly = true
        // Opened before the writer: a writer opens beside readers.
        let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 100), transformer: TransformerFactory.forData())
        let writer = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "the writer did not open beside a reader: \(writer.errors)")

        var random = SeededGenerator(seed: 24)
        var expected: [String: UInt64] = [:]
        var sequence: UInt64 = 0
        for step in 1...400 {
            let key = "k\(random.below(6))"
            let roll = random.below(100)
            if step % 97 == 0 {
                #expect(writer.ask("clear") == "cleared")
                expected = [:]
            } else if roll < 8 {
                #expect(writer.ask("remove \(key)") == "removed \(key)")
                expected[key] = nil
            } else {
                // Small packed values, some large enough for a file of their own, and 60 KB ones whose
                // overwrites pile up dead bytes until the writer compacts (a structural change).
                let size = roll < 14 ? 300_000 : roll < 60 ? 60_000 : random.below(200)
                sequence += 1
                let answer = writer.ask("set \(key) \(size)")
                guard answer == "wrote \(key) \(sequence)" else {
                    Issue.record("the writer answered \(answer.debugDescription): \(writer.errors)")
                    return
                }
                expected[key] = sequence
            }
            for reader in 0..<2 {
                let read: Data?
                do {
                    read = try reader == 0 ? disk.object(forKey: key) : storage.object(forKey: key)
                } catch StorageError.notFound {
                    read = nil
                }
                #expect(read.flatMap { WrittenValue(parsing: $0, key: key) }?.sequence == expected[key],
                        "step \(step), reader \(reader): \(key) read \(read.map { "\($0.count) bytes" } ?? "nothing"), expected #\(expected[key] ?? 0)")
            }
            // The memory copy is never older than the disk: a second read hits memory.
            let again = try? storage.object(forKey: key)
            #expect(again.flatMap { WrittenValue(parsing: $0, key: key) }?.sequence == expected[key], "step \(step): a stale memory copy of \(key)")
            #expect(Set(disk.allKeys) == Set(expected.keys), "step \(step): the keys")
        }
        #expect(disk.recoveryIssues.isEmpty, "a reader reported a write in progress as damage: \(disk.recoveryIssues)")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    @Test("readers on 4 threads of a read-only storage beside a writer process: each read is no older than the last write acknowledged before it began, and no newer than the last begun before it ended")
    func parallelReadersBesideWriterProcess() throws {
        let folder = TemporaryDirectory()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig()
        config.readOnly = true
        let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let writer = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "the writer did not open beside a reader: \(writer.errors)")
        let keys = (0..<4).map { "k\($0)" }
        // Per key: the sequence of the last write acknowledged, and of the last one begun.
        let history = Locked<(acknowledged: [String: UInt64], begun: [String: UInt64])>(([:], [:]))
        let done = Locked(false)
        let problems = Locked<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        let readers = (0..<4).map { number in
            Thread {
                defer { finished.signal() }
                var random = SeededGenerator(seed: UInt64(40 + number))
                var reads = 0
                while !done.withLock({ $0 }) || reads < 50 {
                    let key = keys[random.below(keys.count)]
                    let low = history.withLock { $0.acknowledged[key] }
                    let read = try? disk.object(forKey: key)
                    let high = history.withLock { $0.begun[key] }
                    let sequence = read.flatMap { WrittenValue(parsing: $0, key: key) }?.sequence
                    if let low, sequence.map({ $0 < low }) ?? true {
                        problems.withLock { $0.append("\(key): read #\(sequence ?? 0) after #\(low) was acknowledged") }
                    }
                    if let sequence, sequence > (high ?? 0) {
                        problems.withLock { $0.append("\(key): read #\(sequence), never begun by the read's end") }
                    }
                    reads += 1
                }
            }
        }
        readers.forEach { $0.start() }
        var random = SeededGenerator(seed: 41)
        var sequence: UInt64 = 0
        for _ in 1...150 {
            let key = keys[random.below(keys.count)]
            sequence += 1
            history.withLock { $0.begun[key] = sequence }
            // Small packed values, and some in files of their own.
            let answer = writer.ask("set \(key) \(random.below(10) == 0 ? 300_000 : random.below(200))")
            guard answer == "wrote \(key) \(sequence)" else {
                Issue.record("the writer answered \(answer.debugDescription): \(writer.errors)")
                break
            }
            history.withLock { $0.acknowledged[key] = sequence }
        }
        done.withLock { $0 = true }
        for _ in readers { finished.wait() }
        let found = problems.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) reads out of order; the first: \(Array(found.prefix(5)))")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }

    @Test("stash get, ls, stats and check on a store another process is writing: every value was written, no damage")
    func commandLineReadsALiveStore() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let writer = try ChildProcess(try executable("StashTorture"), ["write", store, "--seed", "7", "--max-size", "0", "--keys", "6"])
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        try #require(writer.waitForOutput(), "the writer did not start: \(writer.errors)")
        let stash = try executable("stash")
        var read: [(key: String, sequence: UInt64)] = []
        let deadline = Date().addingTimeInterval(90)
        for round in 0..<12 where Date() < deadline {
            let key = "k\(round % 6)"
            let get = try ChildProcess.run(stash, ["--dir", store, "get", key])
            #expect(get.status == 0 || get.status == 3, "get \(key): \(get.status) \(get.stderr)")
            if get.status == 0 {
                guard let value = WrittenValue(parsing: get.stdout, key: key) else {
                    Issue.record("get \(key) printed \(get.stdout.count) bytes that are no value written for it")
                    continue
                }
                read.append((key, value.sequence))
            }
            for command in [["ls"], ["stats"], ["check"]] {
                let run = try ChildProcess.run(stash, ["--dir", store] + command)
                #expect(run.status == 0, "\(command): \(run.status) \(String(decoding: run.stdout, as: UTF8.self)) \(run.stderr)")
                if command == ["check"] {
                    #expect(String(decoding: run.stdout, as: UTF8.self).contains("no damage found"))
                }
            }
        }
        writer.kill()
        // Every value read is one the writer wrote: its sequence number was printed (or was the write in flight).
        var written: [String: Set<UInt64>] = [:]
        var last: UInt64 = 0
        for line in writer.lines() {
            let words = line.split(separator: " ")
            guard words.count >= 3, words[0] == "set", let sequence = UInt64(words[2]) else { continue }
            written[String(words[1]), default: []].insert(sequence)
            last = max(last, sequence)
        }
        for (key, sequence) in read {
            #expect(written[key]?.contains(sequence) == true || sequence > last, "\(key) #\(sequence) was never written")
        }
        #expect(!read.isEmpty, "no value was read")
    }

    @Test("a writer killed with SIGKILL while a reader is open: the reader keeps answering, and a new writer opens")
    func readerOutlivesKilledWriter() throws {
        let folder = TemporaryDirectory()
        let torture = try executable("StashTorture")
        let first = try ChildProcess(torture, ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(first, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(first.readLine() == "ready", "\(first.errors)")
        var config = folder.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        for index in 0..<20 { #expect(first.ask("set k\(index) 100") == "wrote k\(index) \(index + 1)") }
        #expect(try WrittenValue(parsing: reader.object(forKey: "k19"), key: "k19")?.sequence == 20)
        first.send("set k0 100000\n") // killed during or after it: k0 is then #1 or #21
        first.kill()
        for index in 1..<20 {
            #expect(try WrittenValue(parsing: reader.object(forKey: "k\(index)"), key: "k\(index)")?.sequence == UInt64(index + 1))
        }
        let k0 = try WrittenValue(parsing: reader.object(forKey: "k0"), key: "k0")?.sequence
        #expect(k0 == 1 || k0 == 21, "k0 read #\(k0 ?? 0)")

        let second = try ChildProcess(torture, ["step", folder.storePath()], input: .held)
        let secondWatchdog = Watchdog(second, seconds: TestDeadline.long)
        defer { secondWatchdog.cancel() }
        #expect(second.readLine() == "ready", "a new writer could not open after the kill: \(second.errors)")
        #expect(second.ask("set k5 10") == "wrote k5 1")
        #expect(try WrittenValue(parsing: reader.object(forKey: "k5"), key: "k5")?.sequence == 1, "the reader missed the new writer's write")
        #expect(second.ask("clear") == "cleared")
        #expect(reader.allKeys.isEmpty)
        second.closeInput()
        #expect(second.wait(upTo: TestDeadline.long) && second.status == 0, "\(second.errors)")
        #expect(reader.recoveryIssues.isEmpty, "\(reader.recoveryIssues)")
    }

    @Test("a writer that does not publish to the shared file (its lock file deleted) keeps readers out, as before")
    func readerRefusedBesideWriterWithoutSharedFile() throws {
        let folder = TemporaryDirectory()
        let holder = try ChildProcess(try executable("StashTorture"), ["hold", folder.storePath()], input: .held)
        let watchdog = Watchdog(holder, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        try #require(holder.waitForOutput(), "\(holder.errors)")
        try FileManager.default.removeItem(atPath: folder.storePath() + "/stash-shared")
        var config = folder.diskConfig()
        config.readOnly = true
        guard case .inUse? = storageError({ _ = try DiskStorage(config: config, transformer: TransformerFactory.forData()) }) else {
            Issue.record("a reader opened beside a writer it cannot follow")
            return
        }
        holder.closeInput()
        #expect(holder.wait(upTo: TestDeadline.long) && holder.status == 0)
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}
