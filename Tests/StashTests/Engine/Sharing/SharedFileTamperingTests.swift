import Foundation
import Testing
import Stash
@testable import StashTorture // hexKey: the key spelling of `StashTorture attack`
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `stash-shared` deleted or replaced by a FIFO while a writer process has the store open: writers
/// opened before and after see each other's writes, or are refused until it is fixed.
@Suite("Writers in several processes: the shared file deleted or replaced", .serialized)
struct SharedFileTamperingTests: OtherWriterScenario {
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
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
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
        let refused = try ChildProcess.run(try executable("StashTorture"), ["attack", folder.storePath(), "--tag", "1"], deadline: TestDeadline.long)
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
}
