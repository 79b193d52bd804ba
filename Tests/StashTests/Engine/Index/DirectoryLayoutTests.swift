import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The key directory's layout (Docs/Format.md, "Key directory"): recency as the use counter with the
/// next number in the header, each entry's uses in an array apart from its slot, the layouts before
/// (`STASHKD3`, uses in 64-byte slots; `STASHKD2`, recency numbered 0…n−1 besides) still read as they
/// are, and a close after reads alone that writes only the uses (a key uses file, "Key uses"):
/// least-recently-used order intact across all of them.
@Suite("Key directory: layout and the layouts before")
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

    /// Rewrites the directory `file` as a layout before wrote it (`magic`): `STASHKD4`, the same without
    /// the page table, a hash of the body and one of the uses; `STASHKD3` or `STASHKD2`, each slot 64
    /// bytes with its uses in its last 16, for `STASHKD2` recency numbered 0…n−1 in the same order and
    /// no next recency; the hashes sealed again.
    private func rewrite(_ file: String, as magic: [UInt8]) throws {
        let current = try Damage.bytes(file)
        let header = try #require(current.withUnsafeBytes { DirectoryFormat.parse($0) })
        if magic == DirectoryFormat.wholeHashMagic {
            var bytes = Array(current[..<header.usesEnd])
            bytes.replaceSubrange(0..<8, with: magic)
            bytes.withUnsafeMutableBytes {
                DirectoryFormat.sealHashes($0, layout: .init(usesStart: header.usesStart, usesEnd: header.usesEnd, pageTable: false))
            }
            return try Damage.write(bytes, to: file)
        }
        let (slots, slotCount) = (header.slotsStart, header.slotCount)
        func u64(_ at: Int) -> UInt64 { current.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) } }
        var bytes = Array(current[..<slots])
        let recency = (0..<slotCount).map { u64(header.usesStart + 16 * $0 + 8) }
        let occupied = (0..<slotCount).filter { u64(slots + 48 * $0) != 0 }
        var rank = [Int: UInt64]()
        for (number, slot) in occupied.sorted(by: { recency[$0] < recency[$1] }).enumerated() { rank[slot] = UInt64(number) }
        for slot in 0..<slotCount {
            bytes += current[(slots + 48 * slot)..<(slots + 48 * slot + 48)]
            bytes += current[(header.usesStart + 16 * slot)..<(header.usesStart + 16 * slot + 8)] // last access
            let number = magic == DirectoryFormat.rankedMagic ? rank[slot] ?? 0 : recency[slot]
            withUnsafeBytes(of: number.littleEndian) { bytes += $0 }
        }
        bytes += current[header.arenaStart..<header.usesStart]
        func put(_ value: UInt64, _ at: Int) { withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(at..<(at + 8), with: $0) } }
        bytes.replaceSubrange(0..<8, with: magic)
        if magic == DirectoryFormat.rankedMagic { put(0, 104) }
        put(0, 112) // no uses hash: the uses are in the slots
        put(bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[128...])) }, 80)
        put(bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[0..<120])) }, 120)
        try Damage.write(bytes, to: file)
    }

    @Test("a directory of a layout before is read as it is: no replay, no report, the LRU order kept; a use after it is the most recent",
          arguments: [DirectoryFormat.rankedMagic, DirectoryFormat.inlineUsesMagic, DirectoryFormat.wholeHashMagic])
    func layoutBeforeIsRead(magic: [UInt8]) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let file = directory.storePath() + "/" + StoreFolder.directoryName
        var random = SeededGenerator(seed: 31)
        let order = Self.keys.shuffled(using: &random)
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            try makeStore(directory, clock: clock, order: order)
            try #require(Array(try Damage.bytes(file)[0..<8]) == DirectoryFormat.magic, "the close wrote no key directory")
            try rewrite(file, as: magic)
            // A key uses file of the layout before `STASHKU2` beside it: not taken, not reported, removed.
            let usesFile = directory.storePath() + "/" + StoreFolder.usesName
            try Damage.write(UsesFormat.formerMagic + [UInt8](repeating: 1, count: 200), to: usesFile)
            do {
                let disk = try openDisk(directory, clock: clock)
                #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                #expect(!FileManager.default.fileExists(atPath: usesFile), "a key uses file of the layout before was left")
                // A writer removes a directory it did not use: this one is still there.
                #expect(Array(try Damage.bytes(file)[0..<8]) == magic)
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

    @Test("a close after reads alone writes only the uses: the directory as it was, and a key uses file that says what the access records say",
          arguments: [DirectoryFormat.magic, DirectoryFormat.wholeHashMagic, DirectoryFormat.inlineUsesMagic, DirectoryFormat.rankedMagic])
    func closeAfterReadsAlone(layout: [UInt8]) throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let file = directory.storePath() + "/" + StoreFolder.directoryName
        let usesFile = directory.storePath() + "/" + StoreFolder.usesName
        try withEngineThresholds(in: directory.path, directoryMinimum: 1) {
            try makeStore(directory, clock: clock, order: [])
            if layout != DirectoryFormat.magic { try rewrite(file, as: layout) }
            var written = try Damage.bytes(file)
            var random = SeededGenerator(seed: 32 + UInt64(layout[7]))
            var order = Self.keys // least recently used first: written in this order
            // Processes that only read, more than an eighth of the keys each: the second takes the uses
            // the first wrote, and writes them again. A directory of a layout before, whose uses are in
            // its slots, is written anew first, in this layout.
            for (round, count) in [25, 10, 10].enumerated() {
                let used = order.shuffled(using: &random).prefix(count)
                do {
                    let disk = try openDisk(directory, clock: clock)
                    #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                    for key in used {
                        clock.advance(by: 1)
                        _ = try disk.object(forKey: key)
                    }
                }
                order = order.filter { !used.contains($0) } + used
                if round == 0, layout != DirectoryFormat.magic {
                    written = try Damage.bytes(file)
                    #expect(Array(written[0..<8]) == DirectoryFormat.magic, "a directory of the layout before was not written anew")
                    #expect(!FileManager.default.fileExists(atPath: usesFile))
                    continue
                }
                #expect(try Damage.bytes(file) == written, "a close after reads alone wrote the directory")
                #expect(Array(try Damage.bytes(usesFile)[0..<8]) == UsesFormat.magic, "the close wrote no key uses file")
            }
            let store = try DiskStore(directory: directory.storePath(), readOnly: true)
            #expect(store.recoveryIssues.isEmpty, "\(store.recoveryIssues)")
            let entries = store.withIndex { $0.entriesOldestFirst }
            #expect(store.accessesSinceDirectory == 0, "the uses file was not taken: the access records were replayed")
            store.close()
            #expect(entries.map(\.key) == order)
            #expect(entries.last?.value.lastAccess == StoredTime.seconds(clock.now))
            // Without the uses file, the access records after the directory give the same.
            try FileManager.default.removeItem(atPath: usesFile)
            let replayed = try DiskStore(directory: directory.storePath(), readOnly: true)
            defer { replayed.close() }
            #expect(replayed.recoveryIssues.isEmpty, "\(replayed.recoveryIssues)")
            #expect(replayed.accessesSinceDirectory == (layout == DirectoryFormat.magic ? 45 : 20))
            let again = replayed.withIndex { $0.entriesOldestFirst }
            #expect(again.map(\.key) == entries.map(\.key))
            #expect(again.map(\.value) == entries.map(\.value))
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
