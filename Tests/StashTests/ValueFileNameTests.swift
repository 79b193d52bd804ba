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

    // Contract 8: file names are stable across launches: the one-buffer builder makes exactly the
    // name the parts would (hash hex, a dot, the generation in lower-case hex).
    @Test("value file names and paths are the hash's hex, a dot and the generation's hex")
    func namesMatchTheirParts() {
        let keys = ["", "a", "user.000042.profile", "ключ/../🙂", String(repeating: "k", count: 10_000)]
        let generations: [UInt64] = [0, 1, 9, 10, 15, 16, 255, 256, 0xabc, 1 << 32, UInt64.max - 1, UInt64.max]
        for key in keys {
            for generation in generations {
                let expected = SHA256.hex(of: key) + "." + String(generation, radix: 16)
                #expect(DiskStore.fileName(forKey: key, generation: generation) == expected)
                #expect(DiskStore.valueFilePath(in: "/tmp/store", forKey: key, generation: generation) == "/tmp/store/" + expected)
                #expect(DiskStore.valueFilePath(in: "", forKey: key, generation: generation) == "/" + expected)
            }
        }
        // The digest itself (FIPS 180-4 test vector "abc"), so a change to the shared hex code shows.
        #expect(SHA256.hex(of: "abc", byteCount: 32) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test("the longest generation is accepted")
    func longestGeneration() {
        #expect(DiskStore.isValueFileName(String(repeating: "0", count: 32) + "." + String(repeating: "f", count: 16)))
    }
}
