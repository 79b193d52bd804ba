import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The version-1 upgrade when a crash cut it short after the marker was written, and with a last
/// access time that is NaN: the old files go, every value is carried over.
@Suite("Version-1 upgrade cut short or fed odd records", .serialized)
struct V1UpgradeInterruptionTests: DiskStoreScenario {
    @Test("an upgrade that a crash cut short after the marker was written: the version-1 files are removed at the next open")
    func upgradeInterruptedAfterMarker() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let values = [(key: "a", data: Data("alpha".utf8), lastAccess: 1_800_000_000.0),
                      (key: "", data: Data(repeating: 3, count: ValueFiles.threshold), lastAccess: 1_800_000_001.0)]
        try Self.writeVersion1Store(at: path, values)
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            #expect(try Self.get(store, "a") == Data("alpha".utf8))
            #expect(try Self.get(store, "") == values[1].data)
            #expect(!Self.fileNames(path).contains(StoreFolder.v1JournalName))
        }
        // The state a crash leaves between `writeMarker()` and the removal of the old files.
        try Self.writeVersion1Store(at: path, values)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(reopened, "a") == Data("alpha".utf8))
        let leftovers = Self.fileNames(path).filter { $0 == StoreFolder.v1JournalName || DiskStore.isVersion1FileName($0) }
        #expect(leftovers.isEmpty, "version-1 files left behind for good: \(leftovers)")
    }

    @Test("a version-1 value whose last access is NaN is carried over, not dropped as damage")
    func upgradeWithNaNLastAccess() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try Self.writeVersion1Store(at: path, [(key: "a", data: Data("alpha".utf8), lastAccess: .nan),
                                               (key: "b", data: Data("beta".utf8), lastAccess: 1_800_000_000)])
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(try Self.get(store, "b") == Data("beta".utf8))
        #expect(try Self.get(store, "a") == Data("alpha".utf8), "\(store.recoveryIssues)")
    }
}
