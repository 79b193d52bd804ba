import Foundation
import Testing
import Stash
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Writers in several processes when something goes wrong around them: the shared file deleted or
// replaced while they run, a process stopped while it holds the store's lock.

@Suite("Writers in several processes: faults", .serialized)
struct SharedWriterFaultTests {
    @Test("the shared file deleted or replaced while two writer processes run: each goes on seeing the other's writes", arguments: [false, true])
    func sharedFileDeletedOrReplaced(replaced: Bool) throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig(sharedWriters: true)
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        let shared = folder.storePath() + "/stash-shared"
        for round in 1...6 {
            #expect(other.ask("set k 100") == "wrote k \(2 * round - 1)")
            #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == UInt64(2 * round - 1))
            if replaced {
                let copy = shared + ".copy"
                try FileManager.default.copyItem(atPath: shared, toPath: copy)
                #expect(rename(copy, shared) == 0)
            } else {
                try FileManager.default.removeItem(atPath: shared)
            }
            // Alternately the other process and this one is first to find the file gone.
            if round % 2 == 0 { try storage.setObject(Data("mine \(round)".utf8), forKey: "m") }
            #expect(other.ask("set k 100") == "wrote k \(2 * round)")
            #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == UInt64(2 * round),
                    "round \(round): this process did not see the other's write after the shared file was \(replaced ? "replaced" : "deleted")")
            try storage.setObject(Data("mine \(round)".utf8), forKey: "m")
            #expect(other.ask("remove m") == "removed m")
            #expect(throws: StorageError.notFound) { try storage.object(forKey: "m") }
        }
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
        #expect(FileManager.default.fileExists(atPath: shared))
    }

    @Test("the shared file deleted, then a writer process opens (a new one) and writes: this process's memory hits and existsObject see it at once")
    func memoryHitAfterSharedFileDeleted() throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig(sharedWriters: true)
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        try storage.setObject(Data("mine".utf8), forKey: "k")
        #expect(try storage.object(forKey: "k") == Data("mine".utf8)) // a copy in memory
        #expect(try !storage.existsObject(forKey: "new"))
        try FileManager.default.removeItem(atPath: folder.storePath() + "/stash-shared")
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        #expect(other.ask("set k 10") == "wrote k 1")
        #expect(other.ask("set new 10") == "wrote new 2")
        #expect(WrittenValue(parsing: try storage.object(forKey: "k"), key: "k")?.sequence == 1, "a stale memory copy")
        #expect(try storage.existsObject(forKey: "new"))
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }

    @Test("a process that holds the store's lock and does not let go: a writer's call throws inUse after the wait, and works once that process is gone")
    func stuckHolderTimesOut() throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig(sharedWriters: true)
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        try storage.setObject(Data("before".utf8), forKey: "k")
        // Holds the folder's lock as a stopped writer would (StashTorture lock-folder takes it with flock).
        let holder = try ChildProcess(try executable("StashTorture"), ["lock-folder", folder.storePath()], input: .held)
        let watchdog = Watchdog(holder, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(holder.readLine() == "locked", "\(holder.errors)")
        let started = DispatchTime.now()
        #expect(throws: StorageError.inUse(directory: storage.path)) { try storage.setObject(Data("during".utf8), forKey: "k") }
        #expect(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds >= 9_000_000_000, "inUse before the wait was over")
        holder.kill()
        try storage.setObject(Data("after".utf8), forKey: "k")
        #expect(try storage.object(forKey: "k") == Data("after".utf8))
    }

    @Test("a writer process that finds another's last record damaged cuts it off and tells every process: a record of the same length it then writes there is seen by the others (the damaged record appended, or in a segment that process had not seen)",
          arguments: [false, true])
    func damagedTailCutOffIsAnnounced(afterNewSegment: Bool) throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(Data("first".utf8), forKey: "a")
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        if afterNewSegment { try storage.removeAll() } // a new segment: the other process opens the store anew
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.storePath()).filter { $0.hasSuffix(".segment") }.sorted()
        let segment = folder.storePath() + "/" + (try #require(segments.last))
        func size() throws -> Int { try #require(FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int) }
        // This process's record of x, as long as the other's of y will be (`step` writes 37 bytes for
        // `set y 10`), is damaged before the other process replays it.
        try storage.setObject(Data(repeating: 1, count: 37), forKey: "x")
        let end = try size()
        let handle = try #require(FileHandle(forUpdatingAtPath: segment))
        try handle.seek(toOffset: UInt64(end - 20))
        try handle.write(contentsOf: [0xFF, 0x00, 0xFF])
        try handle.close()
        #expect(other.ask("set y 10") == "wrote y 1")
        try #require(try size() == end, "y's record did not take x's place: the case is not the one tested")
        #expect(WrittenValue(parsing: try #require(try? storage.object(forKey: "y"), "the other process's write was not seen"), key: "y")?.sequence == 1)
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}
