import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One engine per open folder: storages of several folders opened and released on many threads
/// never hang, and a path whose folder was moved away, removed or made anew by another process reaches
/// the folder there now, not the one an engine still holds.
@Suite("The registry of open stores", .serialized)
struct StoreRegistryTests: StoreFileScenario {
    /// Opening a folder looks through the registry for an orphaned writer of its path. It took a strong
    /// reference to every open engine, of any path: a storage released meanwhile on another thread then
    /// had its store closed (the key directory written) on the opener's thread, after its release had
    /// returned, so a file read right after found the store not closed yet.
    @Test("a store released while other threads open other folders is closed when its release returns")
    func releaseClosesAtOnceWhileOthersOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath("released")
        let directoryFile = path + "/" + StoreFolder.directoryName
        let stop = Locked(false)
        let opener = Thread {
            var round = 0
            while !stop.withLock({ $0 }) {
                _ = try? openDataStore(directory.storePath("other\(round % 50)"))
                round += 1
            }
        }
        opener.start()
        defer { stop.withLock { $0 = true } }
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            for round in 0..<200 {
                do {
                    let storage = try openDataStore(path)
                    try storage.setObject(Data("\(round)".utf8), forKey: "k")
                }
                #expect(FileManager.default.fileExists(atPath: directoryFile), "round \(round): released, not closed")
                try FileManager.default.removeItem(atPath: directoryFile)
            }
        }
    }

    /// Several threads each open and release a storage of their own folder, over and over. Each open
    /// of a folder not open yet looks through every other slot of the registry for an orphan, taking
    /// a strong reference to each engine under the registry's lock: when that reference is the last,
    /// the engine's deinit (which locks the registry again) runs inside the lock.
    @Test("opening and releasing storages of several folders on several threads never hangs")
    func openAndReleaseOnManyThreadsNeverHangs() throws {
        let directory = TemporaryDirectory()
        let threads = 6
        let rounds = 1_500
        for index in 0..<threads { _ = try openDataStore(directory.storePath("store\(index)")) }
        let finished = DispatchSemaphore(value: 0)
        let failures = Locked<[String]>([])
        for index in 0..<threads {
            let path = directory.storePath("store\(index)")
            let thread = Thread {
                for _ in 0..<rounds {
                    do {
                        let storage = try openDataStore(path)
                        _ = try? storage.object(forKey: "k")
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                finished.signal()
            }
            thread.start()
        }
        // A bound on work, not a stand-in for time: the rounds take a few seconds on a loaded machine.
        let deadline = TestDeadline.fromNow
        var hung = 0
        for _ in 0..<threads where finished.wait(timeout: deadline) == .timedOut { hung += 1 }
        #expect(hung == 0, "\(hung) of \(threads) threads hung")
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
    }

    @Test("opening a path whose folder was renamed away reaches the new folder there, not the moved one")
    func folderRenamedAwayThenPathOpened() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let moved = directory.storePath("moved")
        var first: DiskStorage<Data>? = try openDataStore(path)
        try first!.setObject(Data("first".utf8), forKey: "a")
        try FileManager.default.moveItem(atPath: path, toPath: moved)
        var second: DiskStorage<Data>? = try openDataStore(path)
        try second!.setObject(Data("written at the path".utf8), forKey: "b")
        first = nil
        second = nil
        // Every storage of either folder is closed: what the path holds now is what was written to it.
        let reader = try openDataStore(path)
        #expect(Self.value(reader, "b") == Data("written at the path".utf8), "the write went to the moved folder")
        #expect(Self.value(reader, "a") == nil, "a key of the moved folder appears at the path")
    }

    @Test("a read-only storage of a removed folder does not keep a writer from opening the new folder at its path")
    func readerOfRemovedFolderBlocksWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        do {
            let writer = try openDataStore(path)
            try writer.setObject(Data("old".utf8), forKey: "k")
        }
        let reader = try openDataStore(path, readOnly: true)
        #expect(Self.value(reader, "k") == Data("old".utf8))
        try FileManager.default.removeItem(atPath: path)
        let writer = try openDataStore(path)
        try writer.setObject(Data("new".utf8), forKey: "k")
        #expect(Self.value(writer, "k") == Data("new".utf8))
    }

    @Test("a reader opening a path made anew by another process reads that store, not the removed one an engine still holds")
    func readerOfRecreatedPathSeesNewStore() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let first = try openDataStore(path)
        try first.setObject(Data("removed".utf8), forKey: "old")
        try FileManager.default.removeItem(atPath: path)
        // "Another process" (its own DiskStore, its own lock) makes a new store there and closes it.
        do {
            let other = try DiskStore(directory: path, readOnly: false)
            try Self.set(other, "new", Data("theirs".utf8))
            other.close()
        }
        let reader = try openDataStore(path, readOnly: true)
        #expect(Self.value(reader, "new") == Data("theirs".utf8))
        #expect(Self.value(reader, "old") == nil)
        withExtendedLifetime(first) {}
    }
}
