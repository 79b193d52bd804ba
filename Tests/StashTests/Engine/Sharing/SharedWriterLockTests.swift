import Foundation
import Testing
@testable import Stash
@testable import StashEngine
@testable import StashTorture // hexKey: the key spelling of `StashTorture attack`

/// Reads that run without the store's lock, and the count of writer processes: a write from inside
/// such a read waits for the lock another process holds, and once every writer closed, `stash check`
/// reports bytes appended behind the store's back and `stash set` works beside a writer process.
@Suite("Writers in several processes: the lock and the writers count", .serialized)
struct SharedWriterLockTests: StepWriterScenario {
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
        let watchdog = Watchdog(holder, seconds: TestDeadline.long)
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

    @Test("a call that cannot take the lock, because a sole writer in another process holds it, writes no access records beside that writer: its acknowledged write survives")
    func noAccessRecordsWithoutTheLock() throws {
        let folder = TemporaryDirectory()
        do {
            let hybrid = try Storage(diskConfig: folder.diskConfig(sharedWriters: true), memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
            try hybrid.setObject(Data("first".utf8), forKey: "a")
            // 255 disk reads run without the lock, each buffering an access record (one short of a flush).
            let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            for _ in 0..<255 { _ = try disk.object(forKey: "a") }
            #expect(try hybrid.object(forKey: "a") == Data("first".utf8)) // a memory hit, counted as use on the next call
            // A writer that keeps the store to itself opens between this process's calls, and writes.
            let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
            let watchdog = Watchdog(other, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(other.readLine() == "ready", "\(other.errors)")
            #expect(other.ask("set b 5") == "wrote b 1")
            // This call cannot take the lock; the memory hit it records is the 256th access.
            _ = hybrid.entryInfos
            other.closeInput()
            #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
        }
        let reopened = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        #expect(sequence(try? reopened.object(forKey: "b"), "b") == 1, "the other writer's acknowledged write was lost")
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    @Test("two writer processes open and close around a sole writer's open and close; once all closed, stash check reports bytes appended to the segment, and stash set works beside a writer process")
    func writersCountAfterAllClosed() throws {
        let folder = TemporaryDirectory()
        do {
            let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
            try storage.setObject(value("a", 1), forKey: "a")
            // `attack` closes its storage at the end of its input (`step` exits without closing: a killed writer).
            let other = try ChildProcess(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "1"], input: .held)
            let watchdog = Watchdog(other, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(other.readLine() == "ready", "\(other.errors)")
            #expect(other.ask("set \(hexKey("b")) 10") == "wrote \(hexKey("b")) 1000000001")
            // The CLI writes beside both (it opens with the setting on).
            let set = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "set", "c", "hello"], deadline: TestDeadline.long)
            #expect(set.status == 0, "\(set.output) \(set.stderr)")
            #expect(try storage.object(forKey: "c") == Data("hello".utf8))
            other.closeInput()
            #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
        }
        // A sole writer comes and goes, then a shared one.
        let sole = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath()], input: Data("set s 5\n".utf8), deadline: TestDeadline.long)
        #expect(sole.status == 0, "\(sole.stderr)")
        let shared = try ChildProcess.run(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "2"],
                                          input: Data("set \(hexKey("t")) 5\n".utf8), deadline: TestDeadline.long)
        #expect(shared.status == 0, "\(shared.stderr)")
        let clean = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "check"], deadline: TestDeadline.long)
        #expect(clean.status == 0, "\(clean.output) \(clean.stderr)")
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.storePath()).filter { $0.hasSuffix(".segment") }.sorted()
        let handle = try #require(FileHandle(forWritingAtPath: folder.storePath() + "/" + (segments.last ?? "")))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(repeating: 0x5A, count: 40))
        try handle.close()
        let damaged = try ChildProcess.run(try executable("stash"), ["--dir", folder.storePath(), "check"], deadline: TestDeadline.long)
        #expect(damaged.status > 0, "appended bytes not reported: \(damaged.output) \(damaged.stderr)")
    }
}
