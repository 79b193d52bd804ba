import Foundation
import Testing
@testable import Stash
@testable import StashEngine
import StashTestSupport

/// `Storage.inMemory` runs the disk engine on the memory volume: every behaviour of the engine
/// (value files, batches, update, transaction, compaction, segment roll, removeAll, observers,
/// expiry), and no file or folder anywhere.
@Suite("In-memory storage: the engine in memory")
struct InMemoryEngineTests {
    /// A store in a memory folder of the test's own (so that its thresholds can be lowered).
    private func store(_ folder: String, name: String = "store", now: @escaping @Sendable () -> Date = { Date() }) throws -> Storage<Data> {
        try Storage<Data>.inMemory(name: name, memoryConfig: MemoryConfig(), transformer: TransformerFactory.forData(), now: now, folder: folder)
    }

    /// The names of what `path` holds, down to `depth` levels (empty if it cannot be listed).
    private func names(under path: String, depth: Int = 3) -> Set<String> {
        guard depth > 0, let children = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        var result = Set(children.map { path + "/" + $0 })
        for child in children { result.formUnion(names(under: path + "/" + child, depth: depth - 1)) }
        return result
    }

    @Test("an in-memory store creates no file or folder: small and large values, batches, update, transaction, compaction, removeAll")
    func createsNoFiles() throws {
        // Named with a label of the test's own: whatever other tests create meanwhile in the same
        // folders, an entry of this store's would carry it.
        let label = "no-files-\(UUID().uuidString)"
        let watched = [FileManager.default.temporaryDirectory.path, "/dev/shm"]
        let before = watched.map { names(under: $0) }
        let folder = MemoryVolume.newFolderPath()
        var sawFiles: (segments: Int, values: Int) = (0, 0)
        try withEngineThresholds(in: folder, compactionMinimum: 8_192, directoryMinimum: 8, segmentLimit: 16_384) {
            let storage = try store(folder, name: label)
            let large = Data(repeating: 7, count: 300 * 1024) // a value file of its own
            try storage.setObject(large, forKey: "large")
            for round in 0..<40 {
                try storage.setObjects(Dictionary(uniqueKeysWithValues: (0..<10).map { ("k\($0)", Data(repeating: UInt8(round), count: 400)) }))
                try storage.removeObject(forKey: "k\(round % 10)")
            }
            _ = try storage.update(forKey: "counter", default: Data([0])) { $0[0] += 1 }
            try storage.transaction { transaction in
                try transaction.setObject(Data("t".utf8), forKey: "in-transaction")
                try transaction.removeObject(forKey: "k1")
            }
            storage.hybridStorage.diskStorage.settleCompaction()
            let files = try storage.hybridStorage.engine.sync { try $0.log.folder.files() }
            sawFiles = (files.segments.count, files.values.count)
            #expect(try storage.object(forKey: "large") == large)
            #expect(try storage.object(forKey: "counter") == Data([1]))
            #expect(try storage.object(forKey: "in-transaction") == Data("t".utf8))
            let entry = try storage.entry(forKey: "large")
            #expect(entry.filePath?.hasPrefix(MemoryVolume.root + "/") == true)
            #expect(!FileManager.default.fileExists(atPath: entry.filePath ?? "/"))
            try storage.removeAll()
            #expect(storage.allKeys.isEmpty)
            #expect(storage.path.hasPrefix(MemoryVolume.root + "/"))
            #expect(!FileManager.default.fileExists(atPath: storage.path))
        }
        #expect(sawFiles.segments >= 1 && sawFiles.values == 1) // the engine's files were there, in memory
        for (path, earlier) in zip(watched, before) {
            let gained = names(under: path).subtracting(earlier)
            #expect(gained.filter { $0.contains(label) || $0.contains("stash-in-memory") }.isEmpty, "\(path) gained \(gained)")
        }
        #expect(!MemoryVolume.hasFolder(folder))
    }

    @Test("values survive compaction and segment rolls in memory, and a reopened view reads them")
    func compactionAndRoll() throws {
        let folder = MemoryVolume.newFolderPath()
        try withEngineThresholds(in: folder, compactionMinimum: 4_096, segmentLimit: 8_192) {
            let storage = try store(folder)
            var expected: [String: Data] = [:]
            for round in 0..<30 {
                for key in 0..<8 {
                    let value = Data(repeating: UInt8((round + key) & 0xff), count: 300 + key)
                    try storage.setObject(value, forKey: "k\(key)")
                    expected["k\(key)"] = value
                }
            }
            let disk = storage.hybridStorage.diskStorage
            disk.settleCompaction()
            let segmentsBefore = try storage.hybridStorage.engine.sync { try $0.log.folder.files().segments }
            #expect(segmentsBefore.count >= 1)
            try disk.compactNow()
            for (key, value) in expected { #expect(try disk.object(forKey: key) == value) }
            let segmentsAfter = try storage.hybridStorage.engine.sync { try $0.log.folder.files().segments }
            #expect(segmentsAfter.first ?? 0 > segmentsBefore.first ?? 0) // rolled and compacted: new numbers
            #expect(storage.recoveryIssues.isEmpty)
        }
    }

    @Test("two in-memory stores never see each other's values or files")
    func storesApart() throws {
        let first = try Storage<Data>.inMemory(name: "same", transformer: TransformerFactory.forData())
        let second = try Storage<Data>.inMemory(name: "same", transformer: TransformerFactory.forData())
        try first.setObject(Data(repeating: 1, count: 300 * 1024), forKey: "shared-name")
        try second.setObject(Data([2]), forKey: "other")
        #expect(try second.objectIfPresent(forKey: "shared-name") == nil)
        #expect(try first.objectIfPresent(forKey: "other") == nil)
        #expect(first.hybridStorage.engine !== second.hybridStorage.engine)
        #expect(try FileIO.listDirectory(first.path).filter { $0.hasSuffix(".value") }.count == 1)
        #expect(try FileIO.listDirectory(second.path).filter { $0.hasSuffix(".value") }.isEmpty)
    }

    @Test("a released in-memory store frees its memory folder, with every file in it")
    func releaseFreesFolder() throws {
        let folder = MemoryVolume.newFolderPath()
        var path = ""
        do {
            let storage = try store(folder)
            try storage.setObject(Data(repeating: 3, count: 300 * 1024), forKey: "large")
            path = storage.path
            #expect(MemoryVolume.hasFolder(path) && MemoryVolume.hasFolder(folder))
        }
        #expect(!MemoryVolume.hasFolder(path) && !MemoryVolume.hasFolder(folder))
        #expect(throws: StorageError.self) { try FileIO.listDirectory(path) }
    }

    @Test("observers hear changes and expiry follows the test clock, in memory")
    func observersAndExpiry() throws {
        let clock = TestClock()
        let storage = try store(MemoryVolume.newFolderPath(), now: clock.function)
        let heard = Recorder<StorageChange>()
        storage.addStorageObserver(heard) { heard, _, change in heard.append(change) }
        let keyHeard = Recorder<KeyChange<Data>>()
        storage.addObserver(keyHeard, forKey: "soon") { heard, _, change in heard.append(change) }
        try storage.setObject(Data([1]), forKey: "soon", expiry: .seconds(5))
        try storage.setObject(Data([2]), forKey: "later", expiry: .seconds(50))
        try storage.removeObject(forKey: "later")
        clock.advance(by: 6)
        #expect(try storage.objectIfPresent(forKey: "soon") == nil)
        #expect(throws: StorageError.self) { try storage.object(forKey: "soon") }
        #expect(heard.received == [.add(key: "soon"), .add(key: "later"), .remove(key: "later")])
        #expect(keyHeard.received == [.edit(before: nil, after: Data([1]))])
    }

    @Test("a memory store is a sole writer: sharing it with other processes is refused with an error")
    func onlySoleWriter() throws {
        let directory = URL(fileURLWithPath: MemoryVolume.newFolderPath(), isDirectory: true)
        #expect(throws: StorageError.self) {
            try DiskStorage(config: DiskConfig(name: "store", directory: directory, allowsWritersInOtherProcesses: true),
                            transformer: TransformerFactory.forData())
        }
        #expect(throws: StorageError.self) {
            try DiskStorage(config: DiskConfig(name: "store", directory: directory, readOnly: true), transformer: TransformerFactory.forData())
        }
        #expect(!MemoryVolume.hasFolder(directory.path + "/store"))
    }
}
