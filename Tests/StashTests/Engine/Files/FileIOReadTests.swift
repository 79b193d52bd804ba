import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// `FileIO.readWholeFile` reads into an array sized by `fstat` (opening a store reads its whole journal).
@Suite("Reading whole files")
struct FileIOReadTests {
    @Test("a file is read whole, at every size around the one-read boundary")
    func readsWholeFile() throws {
        let directory = TemporaryDirectory()
        for size in [0, 1, 4095, 4096, 65_536, 200_003] {
            let path = directory.path + "/file-\(size)"
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try FileIO.readWholeFile(path) == bytes, "size \(size)")
        }
        #expect(try FileIO.readWholeFile(directory.path + "/missing") == nil)
    }

    #if os(Linux)
    // A file longer than `fstat` says (as if it grew after the call): /proc files report size 0.
    @Test("a file longer than its reported size is still read to its end")
    func readsPastReportedSize() throws {
        let expected = try Data(contentsOf: URL(fileURLWithPath: "/proc/self/cmdline"))
        #expect(!expected.isEmpty)
        #expect(try FileIO.readWholeFile("/proc/self/cmdline") == Array(expected))
    }
    #endif
}
