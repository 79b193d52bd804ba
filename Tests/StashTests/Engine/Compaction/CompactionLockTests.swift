import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// The compaction copy locks (`DiskStore.copyAlone(in:_:)`): one per store folder, whatever path
/// names it, and only while a compaction uses it. They were keyed by the path string and never
/// removed: two paths to one folder (a symlink) got two locks, so two compactions of one folder could
/// copy at once, and the table grew by one lock per folder ever compacted.
@Suite("Compaction copy locks")
struct CompactionLockTests {
    @Test("two paths to one folder (a symlink) share one copy lock")
    func symlinkSharesTheLock() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let link = directory.storePath("link")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        let (real, linked) = (try FolderHandle(path: path), try FolderHandle(path: link))
        DiskStore.copyAlone(in: real) {
            let held = DiskStore.copyLock(of: real)
            #expect(held != nil)
            #expect(held === DiskStore.copyLock(of: linked), "the symlink's path found another lock")
            #expect(DiskStore.copyLock(of: linked)?.try() == false, "the lock taken through one path is free through the other")
        }
        #expect(DiskStore.copyLock(of: real) == nil)
    }

    @Test("after many stores in many folders compacted and closed, none of their copy locks is left")
    func locksAreRemovedOnceUnused() throws {
        let directory = TemporaryDirectory()
        let paths = (0..<24).map { directory.storePath("store-\($0)") }
        try withEngineThresholds(in: directory.path, compactionMinimum: 2 << 10) {
            for (number, path) in paths.enumerated() {
                let disk = try openDataStore(path)
                for round in 0..<60 { try disk.setObject(Data(repeating: UInt8(round), count: 100), forKey: "k\(round % 4)") }
                if number % 2 == 0 { try disk.compactNow() } // on demand; the others compact in the background
                disk.waitForCompaction()
                #expect(try DiskStore.copyLock(of: FolderHandle(path: path)) == nil, "store \(number)")
            }
        }
        // Other tests compact at the same time: the count of the whole table is not asked, each folder's entry is.
        for path in paths { #expect(try DiskStore.copyLock(of: FolderHandle(path: path)) == nil) }
    }
}
