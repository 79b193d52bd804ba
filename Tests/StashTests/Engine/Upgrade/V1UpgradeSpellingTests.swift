import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Issue #20 items 2 and 10: the version-1 upgrade follows Contract item 8 (canonically equivalent
/// spellings are one key) whatever spelling each v1 record used, and splits what it packs into
/// segments at the segment limit (32-bit offsets: one segment could not hold a v1 store above 4 GiB).
///
/// The v1 writer named a value file by the hash of the spelling of the call that wrote it
/// (`<32 hex of SHA-256 of the key's UTF-8>.<hex generation>`), while its index, keyed canonically,
/// kept the first spelling it met; a removal unlinked the file named by the removing call's spelling
/// (a missing file was no error). ``V1Writer`` reproduces exactly that.
@Suite("Version-1 upgrade: key spellings and segment splitting", .serialized)
struct V1UpgradeSpellingTests {
    static let nfc = "caf\u{E9}"
    static let nfd = "cafe\u{301}"

    /// Writes a version-1 store as the v1 engine did, spelling by spelling.
    struct V1Writer {
        let path: String
        private(set) var journal = JournalFormat.magic
        private var generation: UInt64 = 0
        /// The v1 index: canonical keys (Swift's `String` equality), the generation of each.
        private var generations: [String: UInt64] = [:]

        init(_ path: String) throws {
            self.path = path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        }

        func file(_ spelling: String, _ generation: UInt64) -> String {
            path + "/" + DiskStore.version1FileName(forKey: spelling, generation: generation)
        }

        /// v1's `write`: a new file named by this call's spelling, its record, then the replaced
        /// generation's file unlinked under this call's spelling (an error-free no-op for another's).
        mutating func set(_ spelling: String, _ value: String, time: Double) throws {
            generation += 1
            try Data(value.utf8).write(to: URL(fileURLWithPath: file(spelling, generation)))
            JournalFormat.append(.set(key: spelling, V1Record(generation: generation, size: value.utf8.count,
                                                              expiry: Date.distantFuture.timeIntervalSince1970,
                                                              lastAccess: time)), to: &journal)
            if let replaced = generations[spelling] { try? FileManager.default.removeItem(atPath: file(spelling, replaced)) }
            generations[spelling] = generation
        }

        /// v1's `remove`: the record, then the file unlinked under this call's spelling.
        mutating func remove(_ spelling: String) {
            guard let removed = generations.removeValue(forKey: spelling) else { return }
            JournalFormat.append(.remove(key: spelling), to: &journal)
            try? FileManager.default.removeItem(atPath: file(spelling, removed))
        }

        mutating func access(_ spelling: String, time: Double) {
            JournalFormat.append(.access(key: spelling, time: time), to: &journal)
        }

        /// What v1's journal compaction wrote: one set record per entry, in the index's spelling.
        mutating func rewrite(_ records: [(spelling: String, value: String, time: Double)]) {
            journal = JournalFormat.magic
            for record in records {
                guard let generation = generations[record.spelling] else { continue }
                JournalFormat.append(.set(key: record.spelling, V1Record(generation: generation, size: record.value.utf8.count,
                                                                         expiry: Date.distantFuture.timeIntervalSince1970,
                                                                         lastAccess: record.time)), to: &journal)
            }
        }

        func close() throws {
            try Data(journal).write(to: URL(fileURLWithPath: path + "/journal"))
        }
    }

    private func upgraded(_ build: (inout V1Writer) throws -> Void) throws -> (DiskStorage<Data>, TemporaryDirectory) {
        let directory = TemporaryDirectory()
        var writer = try V1Writer(directory.storePath())
        try build(&writer)
        try writer.close()
        return (try openDataStore(directory.storePath()), directory)
    }

    private func value(_ disk: DiskStorage<Data>, _ key: String) -> String? {
        (try? disk.object(forKey: key)).map { String(decoding: $0, as: UTF8.self) }
    }

    // MARK: Item 2: spellings

    @Test("a key overwritten in the other spelling keeps its latest value through the upgrade (both orders)",
          arguments: [(nfc, nfd), (nfd, nfc)])
    func overwriteInOtherSpelling(first: String, second: String) throws {
        let (disk, directory) = try upgraded { writer in
            try writer.set("other", "o", time: 1)
            try writer.set(first, "one", time: 2)
            try writer.set(second, "two", time: 3)
        }
        #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
        #expect(value(disk, Self.nfc) == "two")
        #expect(value(disk, Self.nfd) == "two")
        #expect(disk.allKeys.count == 2)
        // It stays so once the store is version 2.
        let reopened = try openDataStore(directory.storePath())
        #expect(value(reopened, first) == "two")
        #expect(reopened.recoveryIssues.isEmpty)
    }

    @Test("a key removed in the other spelling stays removed; written again after that, it has the new value",
          arguments: [(nfc, nfd), (nfd, nfc)])
    func removeInOtherSpelling(first: String, second: String) throws {
        let (removed, _) = try upgraded { writer in
            try writer.set(first, "one", time: 1)
            writer.remove(second)
        }
        #expect(storageError { _ = try removed.object(forKey: first) }?.isNotFound == true)
        #expect(removed.allKeys.isEmpty)
        #expect(removed.recoveryIssues.isEmpty)

        let (again, _) = try upgraded { writer in
            try writer.set(first, "one", time: 1)
            writer.remove(second)
            try writer.set(second, "three", time: 2)
        }
        #expect(value(again, first) == "three")
        #expect(again.recoveryIssues.isEmpty)

        let (overwrittenThenRemoved, _) = try upgraded { writer in
            try writer.set(first, "one", time: 1)
            try writer.set(second, "two", time: 2)
            writer.remove(first)
        }
        #expect(overwrittenThenRemoved.allKeys.isEmpty)
        #expect(overwrittenThenRemoved.recoveryIssues.isEmpty)
    }

    @Test("an access record in the other spelling moves the key in LRU order without changing which file is its value",
          arguments: [(nfc, nfd), (nfd, nfc)])
    func accessInOtherSpelling(first: String, second: String) throws {
        let (disk, _) = try upgraded { writer in
            try writer.set(first, "one", time: 1)
            try writer.set(second, "two", time: 2)
            try writer.set("b", "b", time: 3)
            writer.access(first, time: 4)
        }
        #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
        #expect(value(disk, first) == "two")
        #expect(disk.entryInfos.map(\.key).first == "b", "the accessed key is the most recently used")
    }

    @Test("a journal v1's compaction rewrote in the index's first spelling still finds the file the latest spelling named")
    func rewrittenJournalNamesFirstSpelling() throws {
        let (disk, _) = try upgraded { writer in
            try writer.set(Self.nfc, "one", time: 1)
            try writer.set(Self.nfd, "two", time: 2)
            try writer.set("x", "x", time: 3)
            writer.rewrite([(Self.nfc, "two", 2), ("x", "x", 3)])
        }
        #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
        #expect(value(disk, Self.nfd) == "two")
        #expect(value(disk, "x") == "x")
    }

    // MARK: Item 10: segment limit

    @Test("the upgrade starts a new segment at the segment limit; values and LRU order survive")
    func upgradeRollsSegments() throws {
        let limit = 16 << 10
        let directory = TemporaryDirectory()
        DiskStore.thresholdOverrides.withLock { $0[directory.path] = DiskStore.Thresholds(upgradeSegmentLimit: limit) }
        defer { DiskStore.thresholdOverrides.withLock { $0[directory.path] = nil } }
        let path = directory.storePath()
        var writer = try V1Writer(path)
        let count = 200
        for index in 0..<count {
            try writer.set("key\(index)", String(repeating: Character(UnicodeScalar(97 + index % 26)!), count: 900), time: Double(index))
        }
        try writer.set("big", String(repeating: "B", count: 40 << 10), time: Double(count)) // a record above the limit
        try writer.close()

        let disk = try openDataStore(path)
        #expect(disk.recoveryIssues.isEmpty)
        #expect(disk.entryInfos.map(\.key) == (0..<count).map { "key\($0)" } + ["big"])
        for index in 0..<count {
            #expect(value(disk, "key\(index)")?.count == 900)
        }
        #expect(value(disk, "big")?.count == 40 << 10)
        let segments = try StoreFiles(path).segments
        #expect(segments.count >= count * 900 / limit, "\(segments)")
        // Every segment but the one holding the oversized record alone stays within the limit.
        let oversized = try segments.filter { try Damage.size(path + "/" + $0) > limit }
        #expect(oversized.count <= 1)
        let reopened = try openDataStore(path)
        #expect(reopened.allKeys.count == count + 1)
        #expect(reopened.recoveryIssues.isEmpty)
    }
}
