import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The key directory's layout (Docs/Format.md, "Key directory"): recency as the use counter with the
/// next number in the header, the layout before (`STASHKD2`, recency numbered 0…n−1) still read as it
/// is, and a close after reads alone that writes the directory it read, resealed: least-recently-used
/// order intact across all of them.
@Suite("Key directory: layout and the layout before")
struct DirectoryLayoutTests {
    private static let keys = (0..<40).map { "key \($0)" }

    /// A store of ``keys`` whose use order, least recent first, is `order`; closed, so it has a directory.
    private func makeStore(_ directory: TemporaryDirectory, clock: TestClock, order: [String]) throws {
        let disk = try openDisk(directory, clock: clock)
        for key in Self.keys { try disk.setObject(Data(repeating: 1, count: 100), forKey: key) }
        for key in order {
            clock.advance(by: 1)
            _ = try disk.object(forKey: key)
        }
    }

    private func openDisk(_ directory: TemporaryDirectory, clock: TestClock, maxSize: Int = 0) throws -> DiskStorage<Data> {
        try DiskStorage(config: directory.diskConfig(maxSize: maxSize), transformer: TransformerFactory.forData(), now: clock.function)
    }

    /// Rewrites the directory `file` as the layout before wrote it: the magic, recency numbered 0…n−1
    /// in the same order, no next recency, both hashes sealed again.
    private func rewriteAsRanked(_ file: String) throws {
        var bytes = try Damage.bytes(file)
        let header = try #require(bytes.withUnsafeBytes { DirectoryFormat.parse($0) })
        func u64(_ at: Int) -> UInt64 { bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) } }
        func put(_ value: UInt64, _ at: Int) { withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(at..<(at + 8), with: $0) } }
        let occupied = (0..<header.slotCount).map { header.slotsStart + $0 * 64 }.filter { u64($0) != 0 }
        for (rank, at) in occupied.sorted(by: { u64($0 + 56) < u64($1 + 56) }).enumerated() { put(UInt64(rank), at + 56) }
        bytes.replaceSubrange(0..<8, with: DirectoryFormat.rankedMagic)
        put(0, 104)
        put(bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[128...])) }, 80)
        put(bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[0..<120])) }, 120)
        try Damage.write(bytes, to: file)
    }

    @Test("a directory of the layout before is read as it is: no replay, no report, the LRU order kept; a use after it is the most recent")
    func rankedLayoutIsRead() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let file = directory.storePath() + "/" + StoreFolder.directoryName
        var random = SeededGenerator(seed: 31)
        let order = Self.keys.shuffled(using: &random)
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            try makeStore(directory, clock: clock, order: order)
            try #require(Array(try Damage.bytes(file)[0..<8]) == DirectoryFormat.magic, "the close wrote no key directory")
            try rewriteAsRanked(file)
            do {
                let disk = try openDisk(directory, clock: clock)
                #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                // A writer removes a directory it did not use: this one is still there.
                #expect(Array(try Damage.bytes(file)[0..<8]) == DirectoryFormat.rankedMagic)
                #expect(disk.entryInfos.map(\.key) == order)
                clock.advance(by: 1)
                _ = try disk.object(forKey: order[0]) // the least recently used becomes the most recent
                try disk.setObject(Data(repeating: 2, count: 100), forKey: "after")
            }
            #expect(Array(try Damage.bytes(file)[0..<8]) == DirectoryFormat.magic, "a close after a change writes the current layout")
            let reopened = try openDisk(directory, clock: clock)
            #expect(reopened.entryInfos.map(\.key) == Array(order.dropFirst()) + [order[0], "after"])
        }
    }

    @Test("a close after reads alone writes what a whole encoding writes: the same entries, records, recency, last uses and header",
          arguments: [false, true])
    func closeAfterReadsAlone(fromRankedLayout: Bool) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let file = directory.storePath() + "/" + StoreFolder.directoryName
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            try makeStore(directory, clock: clock, order: [])
            if fromRankedLayout { try rewriteAsRanked(file) }
            var random = SeededGenerator(seed: fromRankedLayout ? 33 : 32)
            let used = Self.keys.shuffled(using: &random).prefix(25) // more than an eighth: the close writes a directory
            do {
                let disk = try openDisk(directory, clock: clock)
                for key in used {
                    clock.advance(by: 1)
                    _ = try disk.object(forKey: key)
                }
            }
            let written = try Damage.bytes(file)
            #expect(Array(written[0..<8]) == DirectoryFormat.magic)
            let store = try DiskStore(directory: directory.storePath(), readOnly: true)
            defer { store.close() }
            #expect(store.recoveryIssues.isEmpty, "\(store.recoveryIssues)")
            let header = try #require(written.withUnsafeBytes { DirectoryFormat.parse($0) })
            let salts = Dictionary(uniqueKeysWithValues: header.segments.map { ($0.id, $0.salt) })
            let encoded = try #require(store.withIndex { index in
                DirectoryFormat.encode(index.directorySummary(), position: header.position, store: header.store,
                                       segmentSalts: salts, forEach: index.forEachEntry(writing:))
            })
            let whole = try #require(LoadedDirectory(adopting: encoded))
            let resealed = try #require(written.withUnsafeBytes { LoadedDirectory(copying: $0) })
            #expect(whole.header.count == resealed.header.count && whole.header.totalSize == resealed.header.totalSize)
            #expect(whole.header.position == resealed.header.position && whole.header.nextRecency == resealed.header.nextRecency)
            #expect(whole.header.segments.map(\.id) == resealed.header.segments.map(\.id))
            #expect(whole.header.segments.map(\.liveBytes) == resealed.header.segments.map(\.liveBytes))
            #expect(whole.header.earliestExpiry == resealed.header.earliestExpiry)
            let (wholeEntries, resealedEntries) = (KeyDirectory(seed: header.store, base: whole).entriesOldestFirst,
                                                   KeyDirectory(seed: header.store, base: resealed).entriesOldestFirst)
            #expect(wholeEntries.map(\.key) == resealedEntries.map(\.key))
            #expect(wholeEntries.map(\.value) == resealedEntries.map(\.value))
            let entries = store.withIndex { $0.entriesOldestFirst }
            #expect(entries.map(\.key) == resealedEntries.map(\.key))
            #expect(Array(entries.map(\.key).suffix(used.count)) == Array(used))
            #expect(entries.last?.value.lastAccess == StoredTime.seconds(clock.now))
        }
    }

    @Test("the LRU order and eviction survive directory after directory, with the use counter going on from the header")
    func recencyGoesOnAcrossDirectories() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        var random = SeededGenerator(seed: 34)
        var order = Self.keys.shuffled(using: &random)
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            try makeStore(directory, clock: clock, order: order)
            for _ in 0..<3 {
                let disk = try openDisk(directory, clock: clock)
                #expect(disk.entryInfos.map(\.key) == order)
                let used = Array(order.prefix(5).shuffled(using: &random))
                for key in used {
                    clock.advance(by: 1)
                    _ = try disk.object(forKey: key)
                }
                try disk.setObject(Data(repeating: 2, count: 100), forKey: order[10]) // a write is a use too
                order = order.filter { !used.contains($0) && $0 != order[10] } + used + [order[10]]
            }
            // Room for all but the two least recently used: they go first.
            let disk = try openDisk(directory, clock: clock, maxSize: 100 * (Self.keys.count - 1))
            try disk.setObject(Data(repeating: 3, count: 100), forKey: "new")
            #expect(Set(disk.allKeys) == Set(order.dropFirst(2) + ["new"]))
        }
    }
}
