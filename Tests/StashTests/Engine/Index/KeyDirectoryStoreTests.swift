import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// What the rest of the store does over a mapped key directory: `existsObject` off the queue while
/// compactions swap it, the orphan clean-up at open, a read-only open, canonical spellings and
/// accounting, the folder removed under it, and `stash check`.
@Suite("A store around its key directory", .serialized)
struct KeyDirectoryStoreTests: KeyDirectoryScenario {
    @Test("existsObject off the queue never misses a key while compactions swap the directory under it")
    func existsWhileCompactionSwapsTheBase() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, compactionMinimum: 1 << 30, directoryMinimum: 1, segmentLimit: 4096) {
            let storage = try openDataStore(path)
            for index in 0..<50 { try storage.setObject(Self.payload(index), forKey: "stable \(index)") }
            let stop = Locked(false)
            let misses = Locked(0)
            let done = DispatchSemaphore(value: 0)
            Thread {
                while !stop.withLock({ $0 }) {
                    for index in 0..<50 where !storage.existsObject(forKey: "stable \(index)") { misses.withLock { $0 += 1 } }
                }
                done.signal()
            }.start()
            for round in 0..<30 {
                for index in 0..<10 { try storage.setObject(Self.payload(index, round), forKey: "churn \(index)") }
                try storage.compactNow()
            }
            stop.withLock { $0 = true }
            done.wait()
            #expect(misses.withLock { $0 } == 0)
        }
    }

    @Test("value files named only by the directory survive the orphan clean-up at open")
    func valueFilesNamedOnlyByTheDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path, valuesAsFiles: true)
                for index in 0..<5 { try storage.setObject(Self.payload(index), forKey: "file \(index)") }
            }
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)))
            let files = try StoreFiles(path).values
            #expect(files.count == 5)
            for _ in 0..<2 {
                let storage = try openDataStore(path, valuesAsFiles: true)
                #expect(try StoreFiles(path).values == files)
                for index in 0..<5 { #expect(try storage.object(forKey: "file \(index)") == Self.payload(index)) }
                try storage.setObject(Self.payload(9), forKey: "file 9") // a new file: a number none of them has
                try storage.removeObject(forKey: "file 9")
            }
        }
    }

    @Test("a read-only open uses the directory, counts reads as use in memory only and leaves every file as it was")
    func readOnlyOpenWithADirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path)
                for index in 0..<8 { try storage.setObject(Self.payload(index), forKey: "key \(index)") }
            }
            let before = try folderContents(path)
            let reader = try openDataStore(path, readOnly: true)
            #expect(reader.recoveryIssues.isEmpty)
            #expect(try reader.object(forKey: "key 0") == Self.payload(0))
            #expect(reader.entryInfos.map(\.key) == (1..<8).map { "key \($0)" } + ["key 0"])
            #expect(try reader.check().isClean)
            #expect(try folderContents(path) == before)
        }
    }

    @Test("check, canonical spellings and accounting on a store whose keys are in the directory")
    func canonicalSpellingsOverTheBase() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path)
                try storage.setObject(Data(count: 10), forKey: "caf\u{E9}")
                try storage.setObject(Data(count: 30), forKey: "\u{AC00}")
                try storage.setObject(Data(count: 5), forKey: "other")
            }
            do {
                let storage = try openDataStore(path)
                try storage.setObject(Data(count: 20), forKey: "cafe\u{301}")
                #expect(storage.allKeys.count == 3)
                #expect(storage.totalSize == 55)
                try storage.removeObject(forKey: "\u{1100}\u{1161}")
                #expect(storage.totalSize == 25)
                #expect(!storage.existsObject(forKey: "\u{AC00}"))
                #expect(try storage.check().isClean)
            }
            let storage = try openDataStore(path)
            #expect(storage.recoveryIssues.isEmpty)
            #expect(Set(storage.allKeys) == ["caf\u{E9}", "other"])
            #expect(try storage.object(forKey: "caf\u{E9}") == Data(count: 20))
            #expect(storage.totalSize == 25)
            #expect(try storage.check().entries == 2)
        }
    }

    @Test("a store whose folder was removed while its directory was mapped opens the new folder afresh")
    func folderRemovedUnderAMappedDirectory() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path)
                for index in 0..<5 { try storage.setObject(Self.payload(index), forKey: "key \(index)") }
            }
            do {
                let storage = try openDataStore(path)
                #expect(try storage.object(forKey: "key 1") == Self.payload(1))
                try FileManager.default.removeItem(atPath: path)
                try storage.setObject(Self.payload(7), forKey: "after")
                #expect(!storage.existsObject(forKey: "key 1"))
                #expect(storage.allKeys == ["after"])
            }
            let storage = try openDataStore(path)
            #expect(storage.allKeys == ["after"])
            #expect(try storage.object(forKey: "after") == Self.payload(7))
        }
    }

    @Test("stash check reads a store through its directory, and --repair writes a new one for a damaged one")
    func checkWithADirectory() throws {
        let directory = TemporaryDirectory()
        let store = directory.storePath()
        let count = DiskStore.Thresholds.standard.directoryMinimum + 1 // the child process has the standard thresholds
        do {
            let disk = try openDataStore(store)
            var batch = StorageBatch<Data>()
            for index in 0..<count { batch.setObject(Data("value \(index)".utf8), forKey: "k\(index)") }
            try disk.write(batch)
        }
        try #require(FileManager.default.fileExists(atPath: Self.directoryPath(store)))
        let before = try folderContents(store)
        var run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.output.contains("\(count) entries"), "\(run.output)")
        #expect(try folderContents(store) == before, "check changed the store")
        try Damage.flip(Self.directoryPath(store), at: DirectoryFormat.headerLength + 5)
        run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status != 0 && run.output.contains("key directory"), "\(run.output)")
        run = try ReadOnlyHost.stash(["check", "--repair"], store: store)
        #expect(run.status == 0, "stdout: \(run.output) stderr: \(run.stderr)")
        run = try ReadOnlyHost.stash(["check"], store: store)
        #expect(run.status == 0, "after --repair: \(run.output)")
        let disk = try openDataStore(store)
        #expect(disk.recoveryIssues.isEmpty)
        #expect(try disk.object(forKey: "k\(count - 1)") == Data("value \(count - 1)".utf8))
    }
}
