import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The marker names the store's identity: one flipped bit in it does not hide the store's values, and
/// after it was damaged a segment copied in from another store does not take the store over.
@Suite("A damaged marker", .serialized)
struct MarkerDamageTests: StoreFileScenario {
    @Test("a flipped bit in the marker's store identity does not hide every value of the store")
    func flippedBitInMarkerIdentity() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "kept", Data("precious".utf8))
        store!.close()
        store = nil
        let markerPath = path + "/" + StoreFolder.markerName
        var bytes = try Damage.bytes(markerPath)
        // The first digit of the identity whose lowest bit can flip to another hex digit.
        let idStart = Array("Stash store, format 3\nid ".utf8).count
        let hexDigits = Set("0123456789abcdef".utf8)
        let offset = try #require((idStart..<(idStart + 16)).first { hexDigits.contains(bytes[$0] ^ 1) })
        bytes[offset] ^= 1
        try Damage.write(bytes, to: markerPath)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(reopened, "kept") == Data("precious".utf8), "issues: \(reopened.recoveryIssues)")
        reopened.close()
    }

    @Test("after a damaged marker, one segment copied in from another store does not take the store over")
    func foreignSegmentHijacksDamagedMarker() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let otherPath = directory.storePath("other")
        var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
        try Self.set(store!, "mine", Data("of this store".utf8))
        store!.close()
        store = nil
        var other: DiskStore? = try DiskStore(directory: otherPath, readOnly: false)
        try other!.writer.removeAll() // its active segment is now number 2
        try Self.set(other!, "theirs", Data("of another store".utf8))
        other!.close()
        other = nil
        try FileManager.default.copyItem(atPath: otherPath + "/" + SegmentFile.name(of: 2), toPath: path + "/" + SegmentFile.name(of: 2))
        try Damage.write(Array("Stash store, format 3\nid zz\n".utf8), to: path + "/" + StoreFolder.markerName)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(Self.value(reopened, "mine") == Data("of this store".utf8), "issues: \(reopened.recoveryIssues)")
        #expect(Self.value(reopened, "theirs") == nil)
        reopened.close()
    }
}
