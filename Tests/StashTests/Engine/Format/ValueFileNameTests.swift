import Testing
@testable import Stash
@testable import StashEngine

/// Opening removes value files no record names, and compaction removes segments: both recognise the
/// store's files by name alone (Contract item 13), so they must take every name Stash writes and
/// nothing else (other files in the folder are left alone).
@Suite("Store file names")
struct ValueFileNameTests {
    @Test("names Stash writes are recognised")
    func writtenNamesAreRecognised() {
        for id in [UInt64(1), 0x2a, UInt64.max] {
            #expect(ValueFiles.id(ofName: ValueFiles.name(of: id)) == id)
        }
        for id in [UInt32(1), 0x2a, UInt32.max] {
            #expect(SegmentFile.id(ofName: SegmentFile.name(of: id)) == id)
        }
        for (key, generation) in [("", UInt64(1)), ("user/../x", 0x2a), ("ключ", UInt64.max)] {
            #expect(DiskStore.isVersion1FileName(DiskStore.version1FileName(forKey: key, generation: generation)))
        }
    }

    @Test("anything else is not", arguments: [
        "", "journal", "lock", "stash-store", "index.snapshot", "index.snapshot.tmp", "key-directory", "key-directory.tmp",
        "000000000000001.value", "00000000000000001.value", "000000000000000g.value", "000000000000000A.value",
        "0000000000000001.value.tmp", "0000000000000001.values", "0000001.segment", "000000001.segment",
        "0000000g.segment", "00000001.segment.tmp", "0000000000000001", "notes.txt",
    ])
    func otherNamesAreNot(_ name: String) {
        #expect(ValueFiles.id(ofName: name) == nil)
        #expect(SegmentFile.id(ofName: name) == nil)
    }
}
