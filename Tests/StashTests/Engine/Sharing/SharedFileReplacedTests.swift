import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `stash-shared` replaced by another file at its name (a copy renamed over it, as a backup restore or
/// `rsync` without `--inplace` does) while a writer that keeps the store to itself has it open: the
/// writer publishes to its own file, nameless now, until its next check of the shared file
/// (``FolderLossCheck/sharedFileInterval``). A reader follows a file at the name only once a writer
/// publishes to it; until then it reads the files at every call, as when there is no shared file.
@Suite("A shared file replaced under a writer", .serialized)
struct SharedFileReplacedTests: DiskStoreScenario {
    @Test("stash-shared replaced by a copy of itself while a writer has the store open: a reader sees every write that returned, before the writer's next check of its shared file")
    func readerSeesWritesAfterReplacement() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        let clock = ManualNanoseconds()
        writer.log.folderLoss = FolderLossCheck(clock: clock.read) // its checks come due only as the test says
        try Self.set(writer, "a", Data("1".utf8)) // the first write checks the folder and makes the shared file
        let reader = try DiskStorage(config: DiskConfig(name: "store", directory: directory.url, readOnly: true),
                                     transformer: TransformerFactory.forData())
        #expect(try reader.object(forKey: "a") == Data("1".utf8))
        let sharedPath = path + "/" + SharedState.name
        let copy = directory.url.appendingPathComponent("shared-copy").path
        try FileManager.default.copyItem(atPath: sharedPath, toPath: copy)
        #expect(rename(copy, sharedPath) == 0)
        for value in ["2", "3", "4"] {
            try Self.set(writer, "a", Data(value.utf8)) // published to the writer's own file, which lost its name
            #expect(try reader.object(forKey: "a") == Data(value.utf8), "a read missed a write that returned")
        }
        // The writer's next check moves it to the file at the name, which the reader then follows.
        clock.advance(by: FolderLossCheck.sharedFileInterval)
        try Self.set(writer, "a", Data("5".utf8))
        #expect(try reader.object(forKey: "a") == Data("5".utf8))
        try Self.set(writer, "a", Data("6".utf8))
        #expect(try reader.object(forKey: "a") == Data("6".utf8))
    }
}
