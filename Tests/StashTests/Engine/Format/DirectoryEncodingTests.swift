import Foundation
import Testing
import StashTestSupport
@testable import StashEngine

/// The key directory is written in two passes: the index sums its entries (``DirectoryFormat/Summary``)
/// in the order they lie in memory, then hands them over, each with its recency. Entries
/// that do not match what was summed give no directory, never a write past the table or the arena.
@Suite("Key directory: encoding from a summary")
struct DirectoryEncodingTests {
    private static let seed: UInt64 = 0xE2C0DE

    private static func record(_ key: String, file: Bool = false) -> DiskRecord {
        DiskRecord(segment: 2, offset: 64, length: 40, value: file ? .file(id: 7, size: 1 << 20, hash: 9) : .inline(size: 8),
                   expiry: StoredTime.never, lastAccess: 0, keyHash: KeyHash.of(key, seed: seed))
    }

    /// The entries with their recency: 0, 1, 2… in the order given (least recently used first).
    private static func ranked(_ entries: [(String, DiskRecord)]) -> [(String, DiskRecord, UInt64)] {
        entries.enumerated().map { ($1.0, $1.1, UInt64($0)) }
    }

    private static func summary(_ entries: [(String, DiskRecord, UInt64)]) -> DirectoryFormat.Summary {
        var summary = DirectoryFormat.Summary()
        for (key, record, recency) in entries { summary.add(keyLength: key.utf8.count, record, recency: recency) }
        return summary
    }

    private static func summary(_ entries: [(String, DiskRecord)]) -> DirectoryFormat.Summary { summary(ranked(entries)) }

    private static func encode(_ summary: DirectoryFormat.Summary, handing entries: [(String, DiskRecord, UInt64)]) -> [UInt8]? {
        let bytes = DirectoryFormat.encode(summary, position: DirectoryPosition(segment: 2, salt: 2, offset: 64), store: seed,
                                           segmentSalts: [2: 2]) { visit in
            for (key, record, recency) in entries {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record, recency) }
            }
        }
        defer { bytes?.deallocate() }
        return bytes.map { Array($0) }
    }

    private static func encode(_ summary: DirectoryFormat.Summary, handing entries: [(String, DiskRecord)]) -> [UInt8]? {
        encode(summary, handing: ranked(entries))
    }

    /// The one-pass encoder's directory of `oldestFirst`.
    private static func onePass(_ oldestFirst: [(String, DiskRecord)]) -> [UInt8] {
        let bytes = DirectoryFormat.encode(position: DirectoryPosition(segment: 2, salt: 2, offset: 64), store: seed,
                                           segmentSalts: [2: 2]) { visit in
            for (key, record) in oldestFirst {
                var key = key
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
            }
        }
        defer { bytes.deallocate() }
        return Array(bytes)
    }

    @Test("the entries summed in one order, handed over in another with their recency, make the directory the one-pass encoder makes")
    func summedInAnotherOrder() throws {
        let entries = (0..<300).map { ("key \($0)", Self.record("key \($0)", file: $0 % 9 == 0)) }
        let oldestFirst = Self.ranked(entries.reversed())
        var random = SeededGenerator(seed: 35)
        let bytes = try #require(Self.encode(Self.summary(oldestFirst.shuffled(using: &random)), handing: oldestFirst))
        #expect(bytes == Self.onePass(entries.reversed()))
        let directory = try #require(bytes.withUnsafeBytes { LoadedDirectory(copying: $0) }.map { KeyDirectory(seed: Self.seed, base: $0) })
        #expect(directory.entriesOldestFirst.map(\.key) == oldestFirst.map(\.0))
        #expect(directory.base?.header.totalSize == entries.reduce(0) { $0 + $1.1.size })
        #expect(directory.base?.header.nextRecency == 300, "the next use is more recent than every entry")
    }

    @Test("entries handed over in any order, their recency apart, make a directory that finds every key with its recency")
    func anyOrderReadsRight() throws {
        let entries = Self.ranked((0..<400).map { ("key \($0)", Self.record("key \($0)")) })
        var random = SeededGenerator(seed: 36)
        let bytes = try #require(Self.encode(Self.summary(entries), handing: entries.shuffled(using: &random)))
        let directory = try #require(bytes.withUnsafeBytes { LoadedDirectory(copying: $0) }.map { KeyDirectory(seed: Self.seed, base: $0) })
        for (key, record, _) in entries { #expect(directory.peek(key) == record) }
        #expect(directory.entriesOldestFirst.map(\.key) == entries.map(\.0))
    }

    @Test("more entries, longer keys or other value kinds than were summed give no directory, and write nothing out of bounds")
    func handingOverOtherEntries() {
        let summed = [("a", Self.record("a")), ("b", Self.record("b"))]
        #expect(Self.encode(Self.summary(summed), handing: summed) != nil)
        #expect(Self.encode(Self.summary(summed), handing: summed + [("c", Self.record("c"))]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0]]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0], ("a much longer key than summed", Self.record("b"))]) == nil)
        #expect(Self.encode(Self.summary(summed), handing: [summed[0], ("b", Self.record("b", file: true))]) == nil)
        #expect(Self.encode(DirectoryFormat.Summary(), handing: summed) == nil)
    }

    @Test("a page table hashed on several threads (a region of 4 MiB and more) lists each page's own XXH64, the short last page included")
    func pageTableOfLargeRegion() {
        var generator = SeededGenerator(seed: 32)
        let length = DirectoryFormat.parallelHashMinimum + 3 * DirectoryFormat.pageLength + 123
        var region = [UInt8](repeating: 0, count: length)
        region.withUnsafeMutableBytes { bytes in
            for word in 0..<length / 8 { bytes.storeBytes(of: generator.next(), toByteOffset: word * 8, as: UInt64.self) }
        }
        let pages = DirectoryFormat.pageCount(length)
        var table = [UInt8](repeating: 0, count: (pages + 2) * 8)
        region.withUnsafeBytes { region in
            table.withUnsafeMutableBytes { DirectoryFormat.hashPages(region, into: $0, from: 2) }
            table.withUnsafeBytes { table in
                #expect(table.loadUnaligned(fromByteOffset: 0, as: UInt64.self) == 0 && table.loadUnaligned(fromByteOffset: 8, as: UInt64.self) == 0,
                        "an entry before `from` was written")
                for page in 0..<pages {
                    let bytes = UnsafeRawBufferPointer(rebasing: region[(page * DirectoryFormat.pageLength)..<min(length, (page + 1) * DirectoryFormat.pageLength)])
                    #expect(UInt64(littleEndian: table.loadUnaligned(fromByteOffset: (page + 2) * 8, as: UInt64.self)) == XXH64.hash(bytes), "page \(page)")
                }
                #expect(DirectoryFormat.pagesVerify(region, table: table, from: 2))
            }
        }
    }

    @Test("a key uses header whose slot count is crafted near the top of the integers is refused, never traps (found by the fuzzer); page counts never overflow")
    func usesHeaderWithHugeSlotCount() {
        for slots: UInt64 in [0x07FF_FFFF_FFFF_FFFF, 0x07FF_FFFF_FFFF_FF00, UInt64(Int.max) / 16, 1 << 59] {
            var head = [UInt8](repeating: 0, count: UsesFormat.headerLength)
            head.withUnsafeMutableBytes { bytes in
                UsesFormat.magic.withUnsafeBytes { bytes.copyMemory(from: $0) }
                bytes.storeBytes(of: slots.littleEndian, toByteOffset: 56, as: UInt64.self)
                bytes.storeBytes(of: XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])).littleEndian, toByteOffset: 120, as: UInt64.self)
            }
            #expect(head.withUnsafeBytes { UsesFormat.parseHeader($0, fileLength: UsesFormat.headerLength + 4096) } == nil, "slot count \(slots)")
        }
        #expect(DirectoryFormat.pageCount(Int.max) == Int.max / DirectoryFormat.pageLength + 1)
        #expect(DirectoryFormat.pageCount(0) == 0 && DirectoryFormat.pageCount(1) == 1 && DirectoryFormat.pageCount(4096) == 1 && DirectoryFormat.pageCount(4097) == 2)
    }
}
