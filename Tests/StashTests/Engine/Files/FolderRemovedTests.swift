import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The folder of an open store removed (iOS purges Caches folders of running apps) or replaced by a
/// user's own folder: a write that returned keeps its value, and a folder without the marker is never
/// made a store.
@Suite("A store's folder removed underneath it", .serialized)
struct FolderRemovedTests: DiskStoreScenario {
    @Test("a large value staged before its folder was removed is not lost: the write that returned reads back")
    func stagedValueFileAndFolderRemoval() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try DiskStore(directory: path, readOnly: false)
        try Self.set(store, "old", Data("old".utf8))
        let data = Data(repeating: 9, count: ValueFiles.threshold)
        // `DiskEngine.stage` writes the value file on the caller's thread, before the write enters the queue...
        let staged = try StagedValue(store.log.values.write(data, durable: false), folder: store.log.values.handle, size: data.count)
        // ...and the folder is removed in between (iOS purges Caches folders of running apps).
        try FileManager.default.removeItem(atPath: path)
        let result = try store.writer.write("big", data, staged: staged, expiry: .distantFuture, now: Self.now, maxSize: 0, durable: false)
        #expect(result.path.map { FileManager.default.fileExists(atPath: $0) } == true, "the write returned, its file is gone")
        #expect(try Self.get(store, "big") == data)
    }

    @Test("a folder removed and replaced by a user's own folder is not made a store by the next write")
    func startOverIntoForeignFolder() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let store = try DiskStore(directory: path, readOnly: false)
        try Self.set(store, "k", Data("v".utf8))
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        try Data("the user's own file".utf8).write(to: URL(fileURLWithPath: path + "/notes.txt"))
        // A non-empty folder without the marker is refused at open (Contract item 13); a write of a
        // store that is already open should refuse it just the same.
        let error = storageError { try Self.set(store, "k2", Data("v2".utf8)) }
        #expect(error.map { if case .notAStore = $0 { true } else { false } } == true, "\(String(describing: error))")
        #expect(Self.fileNames(path) == ["notes.txt"], "files were created in the user's folder")
    }
}
