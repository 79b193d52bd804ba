import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// The format-3 fixture (``Format3Fixture``) is what its lists say: a copy opens cleanly with exactly
/// those entries, in that LRU order, with those values and expiries. Written while engine v2 is still
/// the engine, so the lists are checked against the code that wrote the stores; the upgrade tests of a
/// later engine then assert the same state after upgrading a copy.
@Suite("The format-3 fixture stores")
struct Format3FixtureTests {
    @Test("a copy opens with the listed entries, LRU order, values and expiries", arguments: Format3Fixture.Store.allCases)
    func copyMatchesLists(store: Format3Fixture.Store) throws {
        let directory = TemporaryDirectory()
        let path = try Format3Fixture.copy(store, to: directory.storePath())
        let before = try folderContents(Format3Fixture.path(of: store))
        #expect(try folderContents(path) == before)
        let end = store == .main ? Format3Fixture.mainEnd : Format3Fixture.filesEnd
        let disk = try openDataStore(path, valuesAsFiles: store == .files, now: { end })
        #expect(disk.recoveryIssues.isEmpty)
        let entries = Format3Fixture.entries(of: store)
        let infos = disk.entryInfos
        // Keys compared by their scalars: `==` on String would accept the other spelling.
        #expect(infos.map { Array($0.key.unicodeScalars) } == entries.map { Array($0.key.unicodeScalars) })
        #expect(infos.map(\.lastAccess) == entries.map(\.lastAccess))
        #expect(infos.map(\.expiry.date) == entries.map(\.expiry))
        #expect(infos.map { $0.filePath != nil } == entries.map { _ in store == .files })
        for entry in entries where (entry.expiry ?? .distantFuture) > end {
            #expect(try disk.object(forKey: entry.key) == entry.value, "\(entry.key)")
        }
        for (_, other) in Format3Fixture.alternateSpellings where entries.contains(where: { $0.key == other }) {
            #expect(disk.existsObject(forKey: other))
        }
        for key in Format3Fixture.removedKeys { #expect(!disk.existsObject(forKey: key)) }
        // Opened in a copy: the fixture itself is untouched.
        #expect(try folderContents(Format3Fixture.path(of: store)) == before)
    }
}

/// Contract items 5–8 through the upgrade of a store written by engine v2 (store format 3) to
/// engine v3 (format 4: the key directory, access records with the key hash).
@Suite("Upgrade from format 3")
struct Format3UpgradeTests {
    @Test("a writer upgrades a format-3 store: marker format 4, the old snapshot gone, and every entry, order and value kept across reopens with a key directory",
          arguments: Format3Fixture.Store.allCases)
    func upgradeKeepsEverything(store: Format3Fixture.Store) throws {
        let directory = TemporaryDirectory()
        let path = try Format3Fixture.copy(store, to: directory.storePath())
        let end = store == .main ? Format3Fixture.mainEnd : Format3Fixture.filesEnd
        let entries = Format3Fixture.entries(of: store)
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let disk = try openDataStore(path, valuesAsFiles: store == .files, now: { end })
                #expect(disk.recoveryIssues.isEmpty, "\(disk.recoveryIssues)")
                let marker = try String(contentsOfFile: path + "/" + StoreFolder.markerName, encoding: .utf8)
                #expect(marker.hasPrefix("Stash store, format 4\n"))
                #expect(!FileManager.default.fileExists(atPath: path + "/" + StoreFolder.formatThreeSnapshotName))
                // A read after the upgrade: an access record of format 4 follows format-3 records.
                if let first = entries.first { _ = try disk.entry(forKey: first.key) }
            } // closed: a key directory is written (threshold lowered)
            #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFolder.directoryName))
            for round in 0..<2 {
                let disk = try openDataStore(path, valuesAsFiles: store == .files, now: { end })
                #expect(disk.recoveryIssues.isEmpty, "round \(round): \(disk.recoveryIssues)")
                let expected = entries.dropFirst().map(\.key) + entries.prefix(1).map(\.key)
                #expect(disk.entryInfos.map { Array($0.key.unicodeScalars) } == expected.map { Array($0.unicodeScalars) }, "round \(round)")
                for entry in entries where (entry.expiry ?? .distantFuture) > end {
                    #expect(try disk.object(forKey: entry.key) == entry.value, "\(entry.key)")
                }
                for key in Format3Fixture.removedKeys { #expect(!disk.existsObject(forKey: key)) }
                if round == 0, let first = entries.first { _ = try disk.entry(forKey: first.key) } // the order stays
            }
        }
    }
}

private extension Expiry {
    /// The stored date; nil for `.never`.
    var date: Date? {
        if case .date(let date) = self { return date }
        return nil
    }
}
