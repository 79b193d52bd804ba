import Foundation
import Testing
import Stash
@testable import StashTorture // hexKey: the key spelling of `StashTorture attack`
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `removeAll` in one writer process deletes its old value files after its call returned: a value
/// another process wrote meanwhile under a freed number survives, and readers opened during the
/// deletions report no damage.
@Suite("Writers in several processes: removeAll and its deletions", .serialized)
struct SharedRemoveAllTests: OtherWriterScenario {
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
        #expect(opener.wait(upTo: TestDeadline.long) && opener.status == 0, "\(opener.errors)")
        // This process opens after that: no value file is left, and it writes one.
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        try storage.setObject(value("mine", 7, size: 300_000), forKey: "mine")
        clearer.closeInput() // its close waits for its deletions
        #expect(clearer.wait(upTo: TestDeadline.long), "\(clearer.errors)")
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
        let deadline = Date().addingTimeInterval(TestDeadline.long)
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
}
