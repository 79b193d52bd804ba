import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `stash check [--repair]` (issue #16): a read-only verification of every record and value that
/// names what it found and exits non-zero on damage; `--repair` drops what is damaged.
@Suite("stash check")
struct CLICheckTests {
    /// A closed store of 50 small values and one in a file of its own.
    private func makeStore(_ store: String) throws {
        let disk = try openDataStore(store)
        for index in 0..<50 { try disk.setObject(Data("value \(index)".utf8), forKey: "k\(index)") }
        try disk.setObject(Data(repeating: 3, count: ValueFiles.threshold), forKey: "large")
    }

    @Test("check of a clean store exits 0, says so and changes no file")
    func cleanStore() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try makeStore(store)
        let before = try folderContents(store)
        let run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.output.contains("no damage found"), "\(run.output)")
        #expect(run.output.contains("51 entries"), "\(run.output)")
        #expect(run.stderr.isEmpty, "no progress on a pipe: \(run.stderr)")
        #expect(try folderContents(store) == before, "check changed the store")
    }

    @Test("check of a damaged segment exits 5 and names the damage; --repair drops it; check is clean again")
    func damagedSegment() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try makeStore(store)
        let segment = store + "/" + (try #require(try StoreFiles(store).segments.first))
        let size = try Damage.size(segment)
        try Damage.flip(segment, at: SegmentFormat.headerLength + (size - SegmentFormat.headerLength) / 2)
        let before = try folderContents(store)

        var run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 5, "stdout: \(run.output) stderr: \(run.stderr)")
        #expect(run.output.contains("damaged") && run.output.contains(".segment"), "\(run.output)")
        #expect(try folderContents(store) == before, "check without --repair changed the store")

        run = try ReadOnlyHost.stash(["check", "--repair"], store: store)
        #expect(run.status == 0, "stdout: \(run.output) stderr: \(run.stderr)")
        #expect(run.output.contains("repaired"), "\(run.output)")
        run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 0, "after --repair: \(run.output)")
        let disk = try openDataStore(store)
        #expect(disk.allKeys.count == 50) // one of the 51 records was damaged
        #expect(disk.recoveryIssues.isEmpty)
        for key in disk.allKeys where key != "large" { #expect(try disk.object(forKey: key) == Data("value \(key.dropFirst())".utf8)) }
    }

    @Test("check of a same-size edit of a value file exits 5 naming the key; --repair drops only it")
    func damagedValueFile() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try makeStore(store)
        let file = store + "/" + (try #require(try StoreFiles(store).values.first))
        try Damage.flip(file, at: 1000)

        var run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 5, "\(run.output)")
        #expect(run.output.contains("\"large\""), "the damaged key is named: \(run.output)")
        run = try ReadOnlyHost.stash(["check", "--repair"], store: store)
        #expect(run.status == 0, "\(run.output) \(run.stderr)")
        #expect(try ReadOnlyHost.stash(["check"], store: store).status == 0)
        let disk = try openDataStore(store)
        #expect(disk.allKeys.count == 50 && !disk.allKeys.contains("large"))
        #expect(try StoreFiles(store).values.isEmpty)
    }

    @Test("check of a missing folder fails and creates nothing; --repair is refused for other commands")
    func missingFolderAndUsage() throws {
        let directory = TemporaryDirectory()
        let missing = directory.path + "/missing/store"
        let run = try ReadOnlyHost.stash(["check"], store: missing)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
        #expect(try ReadOnlyHost.stash(["ls", "--repair"], store: directory.storePath()).status == 2)
        #expect(try ReadOnlyHost.stash(["check", "extra"], store: directory.storePath()).status == 2)
    }

    @Test("check of a torn tail reports it; --repair cuts it off and the store is clean")
    func tornTail() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        try makeStore(store)
        let segment = store + "/" + (try #require(try StoreFiles(store).segments.last))
        try Damage.cut(segment, last: 3)
        #expect(try ReadOnlyHost.stash(["check"], store: store).status == 5)
        #expect(try ReadOnlyHost.stash(["check", "--repair"], store: store).status == 0)
        #expect(try ReadOnlyHost.stash(["check"], store: store).status == 0)
    }
}
