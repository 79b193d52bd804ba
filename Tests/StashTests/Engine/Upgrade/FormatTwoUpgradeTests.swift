import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A format-2 store upgraded with a stray file named like the top segment number beside it: its
/// version-2 segments are kept, for a reader and a writer.
@Suite("Format-2 upgrade beside stray files", .serialized)
struct FormatTwoUpgradeTests: StoreFileScenario {
    @Test("a format-2 store with a stray ffffffff.segment keeps its version-2 segments at the upgrade")
    func formatTwoUpgradeWithStrayTopSegmentName() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try writeFormatTwoStore(path) // one segment whose record sets "old" to "v2!"
        #expect(FileManager.default.createFile(atPath: path + "/ffffffff.segment", contents: Data()))
        let reader = try DiskStore(directory: path, readOnly: true)
        #expect(Self.value(reader, "old") == Data("v2!".utf8), "reader: \(reader.recoveryIssues)")
        reader.close()
        let store = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(store, "old") == Data("v2!".utf8), "writer: \(store.recoveryIssues)")
        store.close()
    }
}
