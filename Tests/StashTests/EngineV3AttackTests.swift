import Foundation
import Testing
@testable import Stash

/// The outside attack on engine v3's index: the key directory file mapped as the index's base, the
/// overlay of changes over it, recency as a counter and the eviction queue. Each defect found has a
/// test here that failed before its fix; attacks the engine held are kept too (their names say "held").
@Suite("Engine v3 attack", .serialized)
struct EngineV3AttackTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func set(_ store: DiskStore, _ key: String, _ data: Data, now: Date = now) throws {
        let outcome = try store.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false)
        outcome.replaced?.remove()
    }

    static func value(_ store: DiskStore, _ key: String) -> Data? {
        try? store.read(key, now: now).data
    }

    static func payload(_ index: Int, _ round: Int = 0) -> Data {
        Data("value \(index) round \(round) ".utf8) + Data(repeating: UInt8(index & 0xFF), count: 200)
    }

    static func segmentPath(_ path: String, _ id: UInt32) -> String { path + "/" + SegmentFile.name(of: id) }

    static func directoryPath(_ path: String) -> String { path + "/" + StoreFolder.directoryName }

    // MARK: Batches and the directory

    /// A batch's set records were indexed with no key hash (0): the directory file then held them
    /// as empty slots, so every entry a batch wrote vanished once a directory was written.
    @Test("entries written by a batch are found again through the key directory")
    func batchEntriesSurviveTheDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            var store: DiskStore? = try DiskStore(directory: path, readOnly: false)
            let changes: [DiskBatchChange] = (0..<6).map { .set(key: "batch \($0)", data: Self.payload($0), expiry: .distantFuture) }
            _ = try store!.writeBatch(changes, now: Self.now, maxSize: 0, durable: false)
            try Self.set(store!, "single", Self.payload(99))
            store!.close()
            store = nil
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
            let reopened = try DiskStore(directory: path, readOnly: false)
            #expect(reopened.recoveryIssues.isEmpty)
            #expect(reopened.withIndex { $0.count } == 7)
            for index in 0..<6 {
                #expect(Self.value(reopened, "batch \(index)") == Self.payload(index), "batch \(index) was lost")
            }
            #expect(Self.value(reopened, "single") == Self.payload(99))
            // In the same process too: compaction writes the directory and maps it as the new base.
            _ = try reopened.writeBatch([.set(key: "later batch", data: Self.payload(7), expiry: .distantFuture)],
                                        now: Self.now, maxSize: 0, durable: false)
            try reopened.compactNow()
            #expect(Self.value(reopened, "later batch") == Self.payload(7))
            #expect(reopened.withIndex { $0.keys.count } == 8)
            reopened.close()
        }
    }
}
