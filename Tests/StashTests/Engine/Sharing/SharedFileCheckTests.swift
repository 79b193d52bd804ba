import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A sole writer checks, when it checks its folder and at most every ``FolderLossCheck/sharedFileInterval``,
/// that the shared file readers follow is still at its name, and makes a new one if it is not (until
/// then readers open the store anew at every call). A check counts as done only once it was made.
@Suite("A sole writer's check of its shared file", .serialized)
struct SharedFileCheckTests: DiskStoreScenario {
    @Test("a sole writer whose active segment and shared file were deleted together makes a new shared file at its next folder check once the interval has passed, not an interval later")
    func sharedFileAfterDetachedSegment() throws {
        let directory = TemporaryDirectory()
        let (writer, clock, sharedPath) = try Self.soleWriter(in: directory)
        defer { writer.close() }
        try Self.set(writer, "a", Data("1".utf8)) // the first write checks the folder and the shared file
        clock.advance(by: FolderLossCheck.sharedFileInterval) // both checks are due again
        // The folder's files deleted but for the marker and the lock: the active segment and the shared file.
        #expect(unlink(try #require(writer.log.active).path) == 0)
        try FileManager.default.removeItem(atPath: sharedPath)
        try Self.set(writer, "b", Data("2".utf8)) // finds its segment unlinked and starts a new one
        #expect(try Self.get(writer, "b") == Data("2".utf8))
        clock.advance(by: FolderLossCheck.longestInterval) // the next folder check; the shared file's is still due
        try Self.set(writer, "c", Data("3".utf8))
        #expect(FileManager.default.fileExists(atPath: sharedPath),
                "the shared file's check was counted as done at the write that found the segment unlinked, which made none")
    }

    @Test("a sole writer checks its shared file at most once an interval: deleted right after a check, it is made anew by the first folder check an interval later")
    func sharedFileCheckedOnceAnInterval() throws {
        let directory = TemporaryDirectory()
        let (writer, clock, sharedPath) = try Self.soleWriter(in: directory)
        defer { writer.close() }
        try Self.set(writer, "a", Data("1".utf8)) // checks both
        try FileManager.default.removeItem(atPath: sharedPath)
        clock.advance(by: FolderLossCheck.longestInterval)
        try Self.set(writer, "b", Data("2".utf8)) // checks the folder; the shared file's check is not due yet
        #expect(!FileManager.default.fileExists(atPath: sharedPath))
        clock.advance(by: FolderLossCheck.sharedFileInterval)
        try Self.set(writer, "c", Data("3".utf8))
        #expect(FileManager.default.fileExists(atPath: sharedPath))
    }

    @Test("a reader's watch that noted a shared file already deleted never calls the store current: a writer publishes to a new file at that name")
    func watchOfDeletedSharedFile() throws {
        let directory = TemporaryDirectory()
        let (writer, _, sharedPath) = try Self.soleWriter(in: directory)
        defer { writer.close() }
        try Self.set(writer, "a", Data("1".utf8)) // makes the shared file
        let shared = try #require(SharedState.openForReading(in: writer.log.folder.handle))
        let watch = FollowWatch()
        watch.note(counter: shared.counter, length: shared.publishedLength, shared: shared, seal: shared.seal)
        #expect(watch.isCurrent)
        try FileManager.default.removeItem(atPath: sharedPath)
        #expect(!watch.isCurrent, "a watch noted before the deletion")
        // A catch-up that found the file just before it was deleted notes it after: its seal is gone.
        watch.note(counter: shared.counter, length: shared.publishedLength, shared: shared, seal: shared.seal)
        #expect(!watch.isCurrent, "a watch noted after the deletion compares the deleted file with itself")
    }

    /// A sole writer of a new store in `directory` whose folder-loss check reads `clock`, and the path
    /// of its shared file.
    private static func soleWriter(in directory: TemporaryDirectory) throws -> (DiskStore, ManualNanoseconds, String) {
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        let clock = ManualNanoseconds()
        writer.log.folderLoss = FolderLossCheck(clock: clock.read)
        return (writer, clock, path + "/" + SharedState.name)
    }
}
