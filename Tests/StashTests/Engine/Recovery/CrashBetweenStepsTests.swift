import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Operations of several file steps stopped between two: a compaction whose first outputs were
/// published and the last not, a `removeAll` whose new segment lost its clear record while the old
/// segments are all back. Nothing is lost and nothing removed returns.
@Suite("A crash between the steps of a compaction or a removeAll", .serialized)
struct CrashBetweenStepsTests: StoreFileScenario {
    @Test("a crash after the first of several compaction outputs was published loses nothing")
    func crashBetweenPublishingCompactionOutputs() throws {
        let directory = TemporaryDirectory()
        try withEngineThresholds(in: directory.path, segmentLimit: 8 << 10) {
            let path = directory.storePath()
            let backup = directory.storePath("backup")
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            for index in 0..<120 { try Self.set(store!, "key \(index)", Self.payload(index)) }
            store!.close()
            store = nil
            // The inputs, as they are before the compaction deletes them.
            try FileManager.default.copyItem(atPath: path, toPath: backup)
            store = try DiskStore(directory: path, readOnly: false)
            try store!.compactNow()
            store!.close()
            store = nil
            let outputs = try StoreFiles(path).segments.filter { name in
                let bytes = try Damage.bytes(path + "/" + name)
                let header = bytes.withUnsafeBytes { SegmentFormat.parseHeader($0) }
                return header.map { $0.flags & SegmentFormat.compactionFlag != 0 } ?? false
            }
            try #require(outputs.count >= 2, "the compaction must write several outputs: \(outputs)")
            // The moment of the crash: the first output renamed, the last not yet, the inputs all there,
            // and not yet the segment that commits the compaction (its floor supersedes the inputs),
            // which is created only once every output is published.
            for name in try StoreFiles(path).segments {
                let header = try Damage.bytes(path + "/" + name).withUnsafeBytes { SegmentFormat.parseHeader($0) }
                if let header, header.floor > 0 { try FileManager.default.removeItem(atPath: path + "/" + name) }
            }
            try FileManager.default.moveItem(atPath: path + "/" + outputs.last!,
                                             toPath: path + "/" + outputs.last! + SegmentFile.unpublishedSuffix)
            for name in try StoreFiles(backup).segments where !FileManager.default.fileExists(atPath: path + "/" + name) {
                try FileManager.default.copyItem(atPath: backup + "/" + name, toPath: path + "/" + name)
            }
            try? FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
            let reopened = try DiskStore(directory: path, readOnly: false)
            let lost = (0..<120).filter { Self.value(reopened, "key \($0)") != Self.payload($0) }
            #expect(lost.isEmpty, "\(lost.count) keys lost: \(lost.prefix(10))…; issues: \(reopened.recoveryIssues)")
            reopened.close()
        }
    }

    @Test("removeAll cut short after the new segment's header (its clear record lost), with the old segments all back: nothing returns")
    func removeAllCutShortBeforeItsClearRecord() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let backup = directory.storePath("backup")
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        for index in 0..<10 { try Self.set(store!, "key \(index)", Self.payload(index)) }
        try FileManager.default.copyItem(atPath: path, toPath: backup)
        try store!.writer.removeAll()
        store!.close()
        store = nil
        let newest = try #require(try StoreFiles(path).segments.last)
        let bytes = try Damage.bytes(path + "/" + newest)
        try Damage.write(Array(bytes.prefix(SegmentFormat.headerLength)), to: path + "/" + newest)
        for name in try StoreFiles(backup).segments where !FileManager.default.fileExists(atPath: path + "/" + name) {
            try FileManager.default.copyItem(atPath: backup + "/" + name, toPath: path + "/" + name)
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.keys.isEmpty, "removed keys came back: \(reopened.keys)")
        reopened.close()
    }
}
