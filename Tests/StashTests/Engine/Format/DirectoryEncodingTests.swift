import Foundation
import Testing
@testable import StashEngine

/// The key directory is written in two passes: the index sums its entries (``DirectoryFormat/Summary``)
/// in the order they lie in memory, then hands them over least recently used first. Entries that do not
/// match what was summed give no directory, never a write past the table or the arena.
@Suite("Key directory: encoding from a summary")
struct DirectoryEncodingTests {
    private static let seed: UInt64 = 0xE2C0DE

    private static func record(_ key: String, file: Bool = false) -> DiskRecord {
        DiskRecord(segment: 2, offset: 64, length: 40, value: file ? .file(id: 7, size: 1 << 20, hash: 9) : .inline(size: 8),
                   expiry: StoredTime.never, lastAccess: 0, keyHash: KeyHash.of(key, seed: seed))
    }

    private static func summary(_ entries: [(String, DiskRecord)]) -> DirectoryFormat.Summary {
        var summary = DirectoryFormat.Summary()
        for (key, record) in entries { summary.add(keyLength: key.utf8.count, record) }
        return summary
    }

    private static func encode(_ summary: DirectoryFormat.Summary, handing entries: [(String, DiskRecord)]) -> [UInt8]? {
        let bytes = DirectoryFormat.encode(summary, position: DirectoryPosition(segment: 2, salt: 2, offset: 64), store: seed,
                                           segmentSalts: [2: 2]) { visit in
            for (key, record) in entries {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { bytes?.deallocate() }
        return bytes.map { Array($0) }
    }

    @Test("the entries summed, handed over in another order, make the directory the one-pass encoder makes")
    func summedInAnotherOrder() throws {
        let entries = (0..<300).map { ("key \($0)", Self.record("key \($0)", file: $0 % 9 == 0)) }
        let oldestFirst = entries.reversed().map { $0 }
        let bytes = try #require(Self.encode(Self.summary(entries), handing: oldestFirst))
        let onePass = DirectoryFormat.encode(position: DirectoryPosition(segment: 2, salt: 2, offset: 64), store: Self.seed,
                                             segmentSalts: [2: 2]) { visit in
            for (key, record) in oldestFirst {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { onePass.deallocate() }
        #expect(bytes == Array(onePass))
        let directory = try #require(bytes.withUnsafeBytes { LoadedDirectory(copying: $0) }.map { KeyDirectory(seed: Self.seed, base: $0) })
        #expect(directory.entriesOldestFirst.map(\.key) == oldestFirst.map(\.0))
        #expect(directory.base?.header.totalSize == entries.reduce(0) { $0 + $1.1.size })
    }

    @Test("more entries, longer keys or other value kinds than were summed give no directory, and write nothing out of bounds")
    func handingOverOtherEntries() {
        let summed = [("a", Self.record("a")), ("b", Self.record("b"))]
        #expect(Self.encode(Self.summary(summed), handing: summed) != nil)
        #expect(Self.encode(Self.summary(summed), handing: summed + [("c", Self.record("c"))]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0]]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0], ("a much longer key than summed", Self.record("b"))]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0], ("b", Self.record("b", file: true))]) == nil)
        #expect(Self.encode(Self.summary([]), handing: summed) == nil)
    }
}
