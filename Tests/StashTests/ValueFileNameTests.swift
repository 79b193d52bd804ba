import Testing
@testable import Stash

/// The sweep for orphan files recognises Stash's value files by name alone (DESIGN item 6): it must
/// take every name Stash writes and nothing else (other files in the folder are left alone).
@Suite("Value file names")
struct ValueFileNameTests {
    @Test("names Stash writes are value file names")
    func writtenNamesAreRecognised() {
        for (key, generation) in [("", UInt64(1)), ("user/../x", 0x2a), ("ключ", UInt64.max)] {
            let name = DiskStore.fileName(forKey: key, generation: generation)
            #expect(DiskStore.isValueFileName(name), "\(name)")
        }
    }

    @Test("anything else is not", arguments: [
        "", "journal", "lock", "journal.compacting",
        String(repeating: "a", count: 32),                          // no generation
        String(repeating: "a", count: 32) + ".",                    // empty generation
        String(repeating: "a", count: 31) + ".1",                   // hash too short
        String(repeating: "a", count: 33) + ".1",                   // hash too long
        String(repeating: "a", count: 32) + "." + String(repeating: "f", count: 17), // generation too long
        String(repeating: "A", count: 32) + ".1",                   // upper case
        String(repeating: "a", count: 32) + ".1.2",                 // two dots
        String(repeating: "a", count: 32) + ".g",                   // not hex
        String(repeating: "a", count: 31) + "é.1",                  // not ASCII
        String(repeating: "a", count: 32) + ".1.tmp",
    ])
    func otherNamesAreNot(_ name: String) {
        #expect(!DiskStore.isValueFileName(name))
    }

    @Test("the longest generation is accepted")
    func longestGeneration() {
        #expect(DiskStore.isValueFileName(String(repeating: "0", count: 32) + "." + String(repeating: "f", count: 16)))
    }
}
