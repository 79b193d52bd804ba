import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Contract items 10 and 11: I/O failures surface and the store recovers; instances share one engine.
@Suite("Disk failures and sharing")
struct DiskFailureTests {
    private func makeDisk(_ directory: TemporaryDirectory, clock: TestClock = TestClock(), valuesAsFiles: Bool = false) throws -> DiskStorage<Data> {
        var config = directory.diskConfig()
        config.storesValuesAsFiles = valuesAsFiles
        return try DiskStorage(config: config, transformer: TransformerFactory.forData(), now: clock.function)
    }

    // Contract 10: a removed directory is recreated on the next write.
    @Test("a store whose folder was removed underneath recreates it on the next write")
    func removedDirectoryIsRecreated() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(User(name: "a", age: 1), forKey: "a")
        try FileManager.default.removeItem(atPath: directory.storePath())

        // A packed value may still be read from the open (unlinked) segment until the next write
        // notices the folder is gone (a design decision): either the old value or an error, never another.
        do {
            #expect(try storage.object(forKey: "a") == User(name: "a", age: 1))
        } catch {}
        try storage.setObject(User(name: "b", age: 2), forKey: "b")
        #expect(try storage.object(forKey: "b").name == "b")
        #expect(storage.allKeys == ["b"])
        #expect(storageError { _ = try storage.object(forKey: "a") }?.isNotFound == true)
        #expect(FileManager.default.fileExists(atPath: directory.storePath() + "/" + StoreFolder.markerName))
        #expect(try !StoreFiles(directory.storePath()).segments.isEmpty)
    }

    // Contract 10: an I/O failure is thrown with its cause, and the store works again afterwards.
    @Test("a failing write throws an I/O error with its POSIX cause and the store keeps working")
    func failingWriteSurfacesCause() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        try disk.setObject(Data("kept".utf8), forKey: "kept")
        // The store folder is removed and a file takes its path: the store cannot open its path anew.
        try FileManager.default.removeItem(atPath: directory.storePath())
        try Data("blocker".utf8).write(to: URL(fileURLWithPath: directory.storePath()))

        let error = storageError { try disk.setObject(Data("new".utf8), forKey: "new") }
        guard case .io(_, _, let underlying as POSIXError)? = error else {
            Issue.record("expected an I/O error with a POSIX cause, got \(String(describing: error))")
            return
        }
        #expect([.ENOTDIR, .EEXIST].contains(underlying.code))
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.storePath())) == Data("blocker".utf8), "the blocker was touched")
        #expect(disk.allKeys == ["kept"]) // nothing recorded for the failed write

        try FileManager.default.removeItem(atPath: directory.storePath())
        try disk.setObject(Data("new".utf8), forKey: "new")
        #expect(try disk.object(forKey: "new") == Data("new".utf8))
        #expect(disk.allKeys == ["new"]) // a new store: "kept" went with the removed folder
    }

    // Contract 13: a store writes only through its own folder; one moved away keeps being written
    // there, and whatever takes its path is left alone.
    @Test("a folder moved away under an open store keeps its writes, and what takes its path is untouched")
    func movedFolderKeepsWrites() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        try disk.setObject(Data("kept".utf8), forKey: "kept")
        let moved = directory.path + "/moved-away"
        try FileManager.default.moveItem(atPath: directory.storePath(), toPath: moved)
        try Data("blocker".utf8).write(to: URL(fileURLWithPath: directory.storePath()))

        let large = Data(repeating: 7, count: ValueFiles.threshold)
        try disk.setObject(large, forKey: "new")
        try disk.setObject(Data("small".utf8), forKey: "small")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory.storePath())) == Data("blocker".utf8))
        #expect(try disk.object(forKey: "new") == large)

        try FileManager.default.removeItem(atPath: directory.storePath())
        try FileManager.default.moveItem(atPath: moved, toPath: directory.storePath())
        #expect(try disk.object(forKey: "kept") == Data("kept".utf8))
        #expect(Set(disk.allKeys) == ["kept", "new", "small"])
    }

    // Contract 10: a value file that cannot be read gives an error without losing other values.
    @Test("a value file replaced by a directory gives an error and other keys still read")
    func unreadableValueFile() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory, valuesAsFiles: true)
        try disk.setObject(Data("a".utf8), forKey: "a")
        try disk.setObject(Data("b".utf8), forKey: "b")
        let path = try #require(try disk.entry(forKey: "a").filePath)
        try FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        #expect(storageError { _ = try disk.object(forKey: "a") } != nil)
        #expect(try disk.object(forKey: "b") == Data("b".utf8))
    }

    // Contract 11: two storages on one folder in one process share one engine and see each other's writes.
    @Test("two storages on one folder see each other's writes, removals and clears")
    func instancesShareOneEngine() throws {
        let directory = TemporaryDirectory()
        let first = try makeUserStorage(in: directory)
        let second = try makeUserStorage(in: directory)
        #expect(first.hybridStorage.engine === second.hybridStorage.engine)

        try first.setObject(User(name: "one", age: 1), forKey: "k")
        #expect(try second.object(forKey: "k").name == "one") // now cached in second's memory
        try first.setObject(User(name: "two", age: 2), forKey: "k")
        #expect(try second.object(forKey: "k").name == "two") // second's memory copy was invalidated
        try second.removeObject(forKey: "k")
        #expect(try !first.existsObject(forKey: "k"))
        try first.setObject(User(name: "three", age: 3), forKey: "k")
        #expect(try second.object(forKey: "k").name == "three")
        try second.removeAll()
        #expect(storageError { _ = try first.object(forKey: "k") }?.isNotFound == true)

        let disk = try makeDisk(directory)
        #expect(disk.engine === first.hybridStorage.engine)
    }

    // Contract 11: a path spelled differently (a symlink, "..") still opens the same engine.
    @Test("the same folder reached by another path shares the engine")
    func differentPathsShareEngine() throws {
        let directory = TemporaryDirectory()
        let disk = try makeDisk(directory)
        let link = directory.path + "/link"
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: directory.storePath())
        let viaLink = try DiskStorage(config: DiskConfig(name: "link", directory: directory.url), transformer: TransformerFactory.forData())
        let viaDots = try DiskStorage(config: DiskConfig(name: "store", directory: directory.url.appendingPathComponent("sub/..")),
                                      transformer: TransformerFactory.forData())
        #expect(viaLink.engine === disk.engine)
        #expect(viaDots.engine === disk.engine)
    }

    // Contract 11: a second process is kept out with a clear error, never silent corruption.
    @Test("a store locked by another open file description throws inUse, and opens once released")
    func lockedStoreThrowsInUse() throws {
        let directory = TemporaryDirectory()
        do { _ = try makeDisk(directory) } // creates the folder, then closes
        // The lock is an flock on the folder. flock locks belong to an open file description: this
        // one stands for another process.
        let fd = open(directory.storePath(), O_RDONLY | O_DIRECTORY)
        #expect(fd >= 0)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        let error = storageError { _ = try makeDisk(directory) }
        guard case .inUse(let path)? = error else {
            Issue.record("expected inUse, got \(String(describing: error))")
            close(fd)
            return
        }
        #expect(path == directory.storePath())
        close(fd)
        #expect(throws: Never.self) { _ = try makeDisk(directory) }
    }

    // Contract 11: when every storage of a folder is released, the engine closes and the lock is freed.
    @Test("releasing every storage closes the engine and frees the folder")
    func releasingClosesEngine() throws {
        let directory = TemporaryDirectory()
        weak var engine: DiskEngine?
        do {
            let storage = try makeUserStorage(in: directory)
            engine = storage.hybridStorage.engine
            let view = storage.transformData()
            try view.setObject(Data("{\"name\":\"a\",\"age\":1}".utf8), forKey: "a")
            _ = storage.addStorageObserver(Observer()) { _, _, _ in }
        }
        #expect(engine == nil)
        let fd = open(directory.storePath(), O_RDONLY | O_DIRECTORY)
        #expect(flock(fd, LOCK_EX | LOCK_NB) == 0)
        close(fd)
    }
}

private final class Observer: Sendable {}
