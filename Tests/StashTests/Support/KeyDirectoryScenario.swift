import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Tests of the key directory (the index file mapped as the index's base, the overlay of changes over
/// it, recency as a counter, the eviction queue): writes at a chosen time, values read back as nil
/// when missing, payloads per round, the files' paths, and the check that the index over a directory
/// is the one a whole replay builds. A suite adopts it and calls `Self.set`, `Self.value`…
protocol KeyDirectoryScenario {}

extension KeyDirectoryScenario {
    static var now: Date { Date(timeIntervalSince1970: 1_800_000_000) }

    static func set(_ store: DiskStore, _ key: String, _ data: Data, now: Date = now) throws {
        let outcome = try store.writer.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false)
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

    /// Keys of every kind the index must treat as one or as different: canonically equivalent
    /// spellings (é precomposed and decomposed, a Hangul syllable and its jamo), empty, NUL, `/`, `..`.
    static var keyPool: [String] { ["a", "b", "c", "d", "e", "f", "g", "h", "caf\u{E9}", "cafe\u{301}", "\u{AC00}", "\u{1100}\u{1161}",
                          "", "k\u{0}nul", "x/../y", "..", "user.1", "user.10", "user.100", "\u{1F600}"] }

    /// The index a store opened with its directory, against the one a whole replay of the same
    /// files builds (a copy without the directory, read-only): the same entries, records, order
    /// (least recently used first), count and total size.
    static func expectSameAsWholeReplay(_ path: String, _ store: DiskStore, _ context: String) throws {
        let copy = path + "-replay"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        defer { try? FileManager.default.removeItem(atPath: copy) }
        try? FileManager.default.removeItem(atPath: directoryPath(copy))
        let replayed = try DiskStore(directory: copy, readOnly: true)
        defer { replayed.close() }
        let mine = store.withIndex { $0.entriesOldestFirst }
        let theirs = replayed.withIndex { $0.entriesOldestFirst }
        #expect(mine.map(\.key) == theirs.map(\.key), "order, \(context)")
        #expect(mine.map(\.value) == theirs.map(\.value), "records, \(context)")
        #expect(store.withIndex { $0.count } == theirs.count, "count, \(context)")
        #expect(store.totalSize == replayed.totalSize, "total size, \(context)")
        #expect(store.totalSize == mine.reduce(0) { $0 + $1.value.size }, "total size of the entries, \(context)")
    }
}
