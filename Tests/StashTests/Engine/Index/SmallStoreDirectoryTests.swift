import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Stores of a few thousand entries (most app stores) keep a key directory with the standard
/// thresholds, so that a launch reads one file instead of replaying every record (issue #32, "reopen
/// at 10k"); a tiny store replays, and a directory that no longer matches its segments is still
/// never taken at that size.
@Suite("A store of a few thousand entries and its key directory", .serialized)
struct SmallStoreDirectoryTests: KeyDirectoryScenario {
    /// Between the minimum (1,000) and the former one (20,000).
    static let entries = 2_000

    /// Writes `count` entries `key i` with round `round`'s payload and closes the store.
    private static func fill(_ path: String, count: Int = entries, round: Int = 0) throws {
        let store = try DiskStore(directory: path, readOnly: false)
        for index in 0..<count { try set(store, "key \(index)", payload(index, round)) }
        store.close()
    }

    /// Whether `store` opened from its key directory (the directory is the index's base; a replay has none).
    private static func openedFromDirectory(_ store: DiskStore) -> Bool {
        store.withIndex { $0.base != nil }
    }

    @Test("a store of 2,000 entries writes its directory at close and reopens from it with every value right")
    func reopensFromItsDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try Self.fill(path)
        #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(Self.openedFromDirectory(reopened))
        #expect(reopened.withIndex { $0.count } == Self.entries)
        try Self.expectSameAsWholeReplay(path, reopened, "2,000 entries") // before the reads below reorder it
        for index in 0..<Self.entries { #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index)") }
    }

    @Test("a store below the minimum closes without writing a directory")
    func tinyStoreWritesNoDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try Self.fill(path, count: 999)
        #expect(!FileManager.default.fileExists(atPath: Self.directoryPath(path)))
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(!Self.openedFromDirectory(reopened))
        for index in 0..<999 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index)") }
    }

    @Test("a store of few entries but a megabyte of records to replay (overwrites) keeps a directory")
    func manyRecordsOfFewEntriesKeepADirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try DiskStore(directory: path, readOnly: false)
        for round in 0..<50 {
            for index in 0..<100 { try Self.set(store, "key \(index)", Self.payload(index, round)) }
        }
        store.close()
        #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
        let reopened = try DiskStore(directory: path, readOnly: false)
        defer { reopened.close() }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(Self.openedFromDirectory(reopened))
        #expect(reopened.withIndex { $0.count } == 100)
        for index in 0..<100 { #expect(Self.value(reopened, "key \(index)") == Self.payload(index, 49), "key \(index)") }
    }

    @Test("a damaged directory of a 2,000-entry store is refused: the segments are replayed, every value right")
    func damagedDirectoryFallsBackToReplay() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try Self.fill(path)
        let file = Self.directoryPath(path)
        try Damage.flip(file, at: try Damage.size(file) / 2)
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(!Self.openedFromDirectory(reopened))
        #expect(reopened.recoveryIssues.contains { $0.isCorrupted })
        #expect(reopened.withIndex { $0.count } == Self.entries)
        for index in 0..<Self.entries { #expect(Self.value(reopened, "key \(index)") == Self.payload(index), "key \(index)") }
        reopened.close() // a directory written anew: taken at the next open
        let again = try DiskStore(directory: path, readOnly: false)
        defer { again.close() }
        #expect(again.recoveryIssues.isEmpty, "\(again.recoveryIssues)")
        #expect(Self.openedFromDirectory(again))
        for index in 0..<Self.entries { #expect(Self.value(again, "key \(index)") == Self.payload(index), "key \(index)") }
    }

    /// A power cut takes the segment's unsynced tail past the durable directory's position; later
    /// writes make the segment longer than that position again, and an older copy of the directory
    /// is put back (a backup restored). Neither open may take it: the tail hash no longer matches.
    @Test("a stale directory of a 2,000-entry store is never taken, before or after the segment grows past it")
    func staleDirectoryFallsBackToReplay() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let segment = Self.segmentPath(path, 1)
        let store = try DiskStore(directory: path, readOnly: false)
        var kept = 0
        for index in 0..<Self.entries {
            try Self.set(store, "key \(index)", Self.payload(index))
            if index == Self.entries - 101 { kept = try Damage.recordsEnd(segment) }
        }
        store.close()
        let stale = try Damage.bytes(Self.directoryPath(path))
        try Damage.write(Array(try Damage.bytes(segment).prefix(kept)), to: segment)
        let cut = try DiskStore(directory: path, readOnly: false)
        #expect(!Self.openedFromDirectory(cut))
        #expect(cut.recoveryIssues.contains { $0.isCorrupted })
        for index in 0..<Self.entries {
            #expect(Self.value(cut, "key \(index)") == (index < Self.entries - 100 ? Self.payload(index) : nil), "key \(index)")
        }
        for index in 0..<200 { try Self.set(cut, "new \(index)", Self.payload(index, 1)) }
        cut.close()
        try Damage.write(stale, to: Self.directoryPath(path))
        let restored = try DiskStore(directory: path, readOnly: false)
        defer { restored.close() }
        #expect(!Self.openedFromDirectory(restored))
        #expect(restored.withIndex { $0.count } == Self.entries - 100 + 200)
        for index in 0..<Self.entries {
            #expect(Self.value(restored, "key \(index)") == (index < Self.entries - 100 ? Self.payload(index) : nil), "key \(index)")
        }
        for index in 0..<200 { #expect(Self.value(restored, "new \(index)") == Self.payload(index, 1), "new \(index)") }
    }
}
