import Foundation
import Testing
@testable import Stash
@testable import StashEngine
@testable import StashTorture // TortureValue: the values `StashTorture step` writes

// A second round of attacks on writers in several processes (`DiskConfig.allowsWritersInOtherProcesses`,
// Contract items 11 and 12): reads that run without the store's lock, the LRU order of reads across
// another process's changes, and what observers hear of another process's overwrites. The other
// process is `StashTorture step --shared` or `lock-folder`. Tests named "held: …" found no defect.

@Suite("Writers in several processes: attacks, round 2", .serialized)
struct SharedWriterAttack2Tests {
    // MARK: Reads without the lock

    @Test("a transformer that writes into the store from inside a read that runs without the lock, while another process holds the lock: the write waits for the lock instead of writing beside that process")
    func transformerWritesInsideLocklessRead() throws {
        let folder = TemporaryDirectory()
        let storage = Locked<Storage<Data>?>(nil)
        let outcomes = Recorder<String>()
        // Decoding the value "trigger" writes key "side" (a transformer that calls back into its store).
        let transformer = Transformer<Data>(toData: { $0 }, fromData: { data in
            if data == Data("trigger".utf8), let storage = storage.withLock({ $0 }) {
                do {
                    try storage.setObject(Data("side".utf8), forKey: "side")
                    outcomes.append("wrote")
                } catch {
                    outcomes.append("\(error)")
                }
            }
            return data
        })
        let hybrid = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 10), transformer: transformer)
        storage.withLock { $0 = hybrid }
        defer { storage.withLock { $0 = nil } }
        // Written through a DiskStorage of the same engine: not in the memory layer, so the read goes to disk.
        let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try disk.setObject(Data("trigger".utf8), forKey: "t")

        let holder = try ChildProcess(try executable("StashTorture"), ["lock-folder", folder.storePath()], input: .held)
        let watchdog = Watchdog(holder, seconds: 120)
        defer { watchdog.cancel() }
        #expect(holder.readLine() == "locked", "\(holder.errors)")
        // Nothing changed since this process's last call: the read runs without the lock, which the other holds.
        #expect(try hybrid.object(forKey: "t") == Data("trigger".utf8))
        #expect(!outcomes.received.contains("wrote"), "the transformer's write ran while another process held the store's lock")
        holder.kill()
        holder.waitUntilExit()
        // Held by nobody: the write inside the read runs, holding the lock.
        try disk.setObject(Data("trigger".utf8), forKey: "t2")
        #expect(try hybrid.object(forKey: "t2") == Data("trigger".utf8))
        #expect(outcomes.received.last == "wrote")
        #expect(try disk.object(forKey: "side") == Data("side".utf8))
    }

    // MARK: LRU order

    @Test("a read's use survives another process opening the store before this process's next call: maxSize evicts the value not read, not the one read")
    func readSurvivesAnotherProcessesOpen() throws {
        let folder = TemporaryDirectory()
        var config = folder.diskConfig(sharedWriters: true)
        config.maxSize = 5_500
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        for index in 0..<5 { try storage.setObject(value("k\(index)", UInt64(index + 1)), forKey: "k\(index)") }
        #expect(sequence(try storage.object(forKey: "k0"), "k0") == 1) // k0 is now the most recently used
        // Another writer process opens and closes the store (its open moves the shared file's counter).
        let other = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], deadline: 30)
        #expect(other.status == 0, "\(other.stderr)")
        try storage.setObject(value("k5", 6), forKey: "k5") // over maxSize: the least recently used goes
        let left = Set(storage.allKeys)
        #expect(left.contains("k0"), "the value read last was evicted: \(left.sorted())")
        #expect(!left.contains("k1"), "\(left.sorted())")
    }

    // MARK: Observers

    @Test("a key observer hears another process's overwrite as an edit from the value it replaced")
    func foreignOverwriteHasBefore() throws {
        let folder = TemporaryDirectory()
        let storage = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let edits = Recorder<String>()
        storage.addObserver(edits, forKey: "k") { recorder, _, change in
            switch change {
            case .edit(let before, let after):
                let old = before.flatMap { WrittenValue(parsing: $0, key: "k")?.sequence }.map(String.init) ?? "nil"
                let new = WrittenValue(parsing: after, key: "k").map { String($0.sequence) } ?? "?"
                recorder.append("\(old)->\(new)")
            case .remove:
                recorder.append("remove")
            }
        }
        try storage.setObject(value("k", 100), forKey: "k")
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: 120)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        #expect(other.ask("set k 10") == "wrote k 1")
        _ = try storage.existsObject(forKey: "unrelated") // this process's next call
        #expect(other.ask("set k 300000") == "wrote k 2")
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        #expect(edits.received == ["nil->100", "100->1", "1->2"])
        other.closeInput()
        #expect(other.wait(upTo: 30) && other.status == 0, "\(other.errors)")
    }

    // MARK: The writers count

    @Test("held: two writer processes open and close around a sole writer's open and close; once all closed, stash check reports bytes appended to the segment, and stash set works beside a writer process")
    func writersCountAfterAllClosed() throws {
        let folder = TemporaryDirectory()
        do {
            let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            try storage.setObject(value("a", 1), forKey: "a")
            // `attack` closes its storage at the end of its input (`step` exits without closing: a killed writer).
            let other = try ChildProcess(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "1"], input: .held)
            let watchdog = Watchdog(other, seconds: 120)
            defer { watchdog.cancel() }
            #expect(other.readLine() == "ready", "\(other.errors)")
            #expect(other.ask("set \(hexKey("b")) 10") == "wrote \(hexKey("b")) 1000000001")
            // The CLI writes beside both (it opens with the setting on).
            let set = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "set", "c", "hello"], deadline: 30)
            #expect(set.status == 0, "\(set.output) \(set.stderr)")
            #expect(try storage.object(forKey: "c") == Data("hello".utf8))
            other.closeInput()
            #expect(other.wait(upTo: 30) && other.status == 0, "\(other.errors)")
        }
        // A sole writer comes and goes, then a shared one.
        let sole = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath()], input: Data("set s 5\n".utf8), deadline: 30)
        #expect(sole.status == 0, "\(sole.stderr)")
        let shared = try ChildProcess.run(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "2"],
                                          input: Data("set \(hexKey("t")) 5\n".utf8), deadline: 30)
        #expect(shared.status == 0, "\(shared.stderr)")
        let clean = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "check"], deadline: 30)
        #expect(clean.status == 0, "\(clean.output) \(clean.stderr)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.storePath()).filter { $0.hasSuffix(".segment") }.sorted()
        let handle = try #require(FileHandle(forWritingAtPath: folder.storePath() + "/" + (segments.last ?? "")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 40))
        try handle.close()
        let damaged = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "check"], deadline: 30)
        #expect(damaged.status != 0, "appended bytes not reported: \(damaged.output) \(damaged.stderr)")
    }

    // MARK: Helpers

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }

    /// A self-verifying value of `key` with sequence number `sequence` (as `StashTorture` writes them).
    private func value(_ key: String, _ sequence: UInt64, size: Int = 1_000) -> Data {
        TortureValue.make(key: key, sequence: sequence, payloadCount: size)
    }

    private func sequence(_ data: Data?, _ key: String) -> UInt64? {
        data.flatMap { TortureValue.sequence(of: $0, key: key) }
    }
}
