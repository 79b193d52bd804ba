import Foundation
import Testing
import StashTestSupport
@testable import StashEngine

/// A reader that opens while a writer's compaction is between its steps can list the segments before
/// the compaction's new segment is made and read the key directory after the new one is renamed in:
/// an intact directory that names a segment the reader did not list. Beside a live writer that is a
/// change in progress, not damage (the reader replays the segments it listed, and the structure the
/// writer publishes makes its next call open the store anew); with no writer, it is damage.
@Suite("Readers in other processes: a key directory newer than the segments listed", .serialized)
struct ReaderDirectoryTests: DiskStoreScenario {
    @Test("a reader that lists the segments before a live writer's new one appears, then finds the directory naming it, reports no damage and reads every key once it is there")
    func directoryNewerThanListingBesideLiveWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        let newest = try Self.twoSegmentsAndDirectory(writer)
        // What the reader's listing missed: the newest segment, hidden while it opens.
        let hidden = path + "/hidden"
        #expect(rename(path + "/" + newest, hidden) == 0)
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(reader.recoveryIssues.isEmpty, "a change in progress beside a live writer reported as damage: \(reader.recoveryIssues)")
        #expect(try Self.get(reader, "old") == Data("1".utf8))
        // The compaction's last step publishes the change; the reader's next call opens the store anew.
        #expect(rename(hidden, path + "/" + newest) == 0)
        writer.log.publishStructure()
        #expect(reader.catchUp())
        #expect(try Self.get(reader, "new") == Data("2".utf8))
        try Self.set(writer, "next", Data("3".utf8)) // the writer goes on; the reader follows it
        #expect(reader.catchUp())
        #expect(try Self.get(reader, "next") == Data("3".utf8))
        writer.close()
    }

    @Test("with no writer at work, a key directory naming a segment that is not there is reported as damage, and the segments there are read")
    func directoryNamingMissingSegmentWithoutWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        let newest = try Self.twoSegmentsAndDirectory(writer)
        writer.close()
        #expect(rename(path + "/" + newest, path + "/hidden") == 0)
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(reader.recoveryIssues.contains { if case .corrupted = $0 { true } else { false } },
                "a directory naming a missing segment went unreported: \(reader.recoveryIssues)")
        #expect(try Self.get(reader, "old") == Data("1".utf8))
    }

    /// Writes "old" into one segment and "new" into the next, then a key directory that names both;
    /// returns the file name of the newer segment.
    private static func twoSegmentsAndDirectory(_ writer: DiskStore) throws -> String {
        try set(writer, "old", Data("1".utf8))
        try writer.log.roll()
        try set(writer, "new", Data("2".utf8))
        try writer.writeDirectory()
        return SegmentFile.name(of: try #require(writer.log.active).id)
    }
}
