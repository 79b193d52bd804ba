import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// What one process's reads mean beside another writer process: a read's use survives the other
/// process opening the store (`maxSize` evicts the value not read), and a key observer hears the other
/// process's overwrite as an edit from the value it replaced.
@Suite("Writers in several processes: reads and what observers hear", .serialized)
struct SharedWriterReadTests: StepWriterScenario {
    @Test("a read's use survives another process opening the store before this process's next call: maxSize evicts the value not read, not the one read")
    func readSurvivesAnotherProcessesOpen() throws {
        let folder = TemporaryDirectory()
        var config = folder.diskConfig(sharedWriters: true)
        config.maxSize = 5_500
        let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        for index in 0..<5 { try storage.setObject(value("k\(index)", UInt64(index + 1)), forKey: "k\(index)") }
        #expect(sequence(try storage.object(forKey: "k0"), "k0") == 1) // k0 is now the most recently used
        // Another writer process opens and closes the store (its open moves the shared file's counter).
        let other = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], deadline: TestDeadline.long)
        #expect(other.status == 0, "\(other.stderr)")
        try storage.setObject(value("k5", 6), forKey: "k5") // over maxSize: the least recently used goes
        let left = Set(storage.allKeys)
        #expect(left.contains("k0"), "the value read last was evicted: \(left.sorted())")
        #expect(!left.contains("k1"), "\(left.sorted())")
    }

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
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        #expect(other.ask("set k 10") == "wrote k 1")
        _ = try storage.existsObject(forKey: "unrelated") // this process's next call
        #expect(other.ask("set k 300000") == "wrote k 2")
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        #expect(edits.received == ["nil->100", "100->1", "1->2"])
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }
}
