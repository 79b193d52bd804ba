import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files a store did not write, in its folder or in a file's place: a segment name at the top of the
/// numbering, a symbolic link, a folder or a FIFO where a segment or the snapshot should be. The store
/// opens, reports what it skipped, and keeps its own values.
@Suite("Stray files in a store's folder", .serialized)
struct StrayFileTests: StoreFileScenario {
    @Test("a stray file named fffffffe.segment does not crash the process at the next compaction")
    func straySegmentNameAtTheTopOfTheRange() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<20 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        store!.close()
        store = nil
        // Any file of that name: an empty one (a crash of some tool, a copy cut short) will do.
        #expect(FileManager.default.createFile(atPath: path + "/fffffffe.segment", contents: Data()))
        let reopened = try DiskStore(directory: path, readOnly: false)
        try reopened.compactNow()
        for index in 0..<20 {
            #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index) was lost")
        }
        reopened.close()
    }

    @Test("a store opens when one of its segments was replaced by a symbolic link or a folder",
          arguments: ["symlink", "folder"])
    func segmentReplacedByLinkOrFolder(kind: String) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "before", Data("in segment 1".utf8))
        try store!.writer.removeAll() // segment 2 is active now; put a key in it
        try Self.set(store!, "kept", Data("in segment 2".utf8))
        store!.close()
        store = nil
        // A third segment, then replaced: the store's own data stays in segment 2.
        let victim = path + "/" + SegmentFile.name(of: 3)
        if kind == "symlink" {
            try FileManager.default.createSymbolicLink(atPath: victim, withDestinationPath: path + "/" + SegmentFile.name(of: 2))
        } else {
            try FileManager.default.createDirectory(atPath: victim + "/inside", withIntermediateDirectories: true)
        }
        for readOnly in [true, false] {
            do {
                let reopened = try DiskStore(directory: path, readOnly: readOnly)
                #expect(Self.value(reopened, "kept") == Data("in segment 2".utf8))
                #expect(!reopened.recoveryIssues.isEmpty, "the planted \(kind) went unreported")
                reopened.close()
            } catch {
                Issue.record("a \(kind) in a segment's place keeps the store from opening (readOnly: \(readOnly)): \(error)")
            }
        }
    }

    @Test("a FIFO in a segment's place or the snapshot's neither blocks nor keeps the store from opening")
    func fifoInPlaceOfSegmentOrSnapshot() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "kept", Data("kept".utf8))
        store!.close()
        store = nil
        #expect(mkfifo(path + "/" + SegmentFile.name(of: 2), 0o644) == 0)
        // A test running meanwhile may have lowered the snapshot threshold: a snapshot may be there.
        try? FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
        #expect(mkfifo(path + "/" + StoreFolder.directoryName, 0o644) == 0)
        let reader = try DiskStore(directory: path, readOnly: true)
        #expect(Self.value(reader, "kept") == Data("kept".utf8))
        reader.close()
        let writer = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(writer, "kept") == Data("kept".utf8))
        #expect(!writer.recoveryIssues.isEmpty)
        writer.close()
    }
}
