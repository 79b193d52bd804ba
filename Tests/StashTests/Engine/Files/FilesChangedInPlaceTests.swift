import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What an open store trusts of the files it checked once (Contract, "What a store trusts"): another
/// program rewriting the key directory in place while a store has it open (zeros, an older copy put
/// back as `rsync --inplace` or `dd conv=notrunc` do, flipped bits) changes no answer of that store,
/// and nothing of it reaches the directory the store writes next.
@Suite("Files changed in place under an open store")
struct FilesChangedInPlaceTests {
    static func payload(_ index: Int, _ round: Int) -> Data { Data("value \(index) of round \(round)".utf8) }

    /// Writes `bytes` over the start of the file at `path`, in place: no truncation, no new inode.
    static func overwriteInPlace(_ path: String, with bytes: [UInt8]) throws {
        let fd = open(path, O_WRONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        try #require(written == bytes.count)
    }

    static func directoryPath(_ path: String) -> String { path + "/" + StoreFolder.directoryName }

    /// A store of `count` keys (round 0) whose key directory was written at close.
    static func makeStore(_ path: String, count: Int) throws {
        let storage = try openDataStore(path)
        try storage.setObjects(Dictionary(uniqueKeysWithValues: (0..<count).map { ("key \($0)", payload($0, 0)) }))
    }

    @Test("a key directory zeroed in place while open changes no answer, nor the next directory")
    func directoryZeroedWhileOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            try Self.makeStore(path, count: 2_000)
            do {
                let storage = try openDataStore(path)
                #expect(try storage.object(forKey: "key 1") == Self.payload(1, 0))
                let size = try Damage.size(Self.directoryPath(path))
                try Self.overwriteInPlace(Self.directoryPath(path), with: [UInt8](repeating: 0, count: size))
                for index in stride(from: 0, to: 2_000, by: 97) {
                    #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, 0), "key \(index) while open")
                }
                try storage.setObject(Self.payload(0, 1), forKey: "key 0") // a change: the close writes a directory
            }
            let storage = try openDataStore(path)
            #expect(storage.allKeys.count == 2_000)
            #expect(try storage.object(forKey: "key 0") == Self.payload(0, 1))
            for index in stride(from: 1, to: 2_000, by: 13) {
                #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, 0), "key \(index) after reopening")
            }
        }
    }

    @Test("an older key directory written back in place while open brings back no old value, now or after a reopen")
    func olderDirectoryWrittenBackWhileOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            try Self.makeStore(path, count: 1_000)
            let older = try Damage.bytes(Self.directoryPath(path))
            do {
                let storage = try openDataStore(path)
                for index in 0..<100 { try storage.setObject(Self.payload(index, 1), forKey: "key \(index)") }
            }
            do {
                let storage = try openDataStore(path) // opens with the directory of round 1
                try Self.overwriteInPlace(Self.directoryPath(path), with: older)
                for index in 0..<100 {
                    #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, 1), "key \(index) while open")
                }
                try storage.setObject(Self.payload(999, 2), forKey: "key 999")
            }
            let storage = try openDataStore(path)
            for index in 0..<100 {
                #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, 1), "key \(index) after reopening")
            }
            #expect(try storage.object(forKey: "key 999") == Self.payload(999, 2))
            #expect(storage.allKeys.count == 1_000)
        }
    }

    @Test("bits flipped in the key directory's slots while open lose no key, now or after a reopen")
    func slotHashesFlippedWhileOpen() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            try Self.makeStore(path, count: 3_000)
            do {
                let storage = try openDataStore(path)
                var bytes = try Damage.bytes(Self.directoryPath(path))
                let header = try #require(bytes.withUnsafeBytes { DirectoryFormat.parse($0) })
                for slot in stride(from: 0, to: header.slotCount, by: 100) {
                    bytes[header.slotsStart + slot * DirectoryFormat.slotLength] ^= 0x10 // the key hash's low byte
                }
                try Self.overwriteInPlace(Self.directoryPath(path), with: bytes)
                #expect(storage.allKeys.count == 3_000)
                for index in 0..<3_000 where try storage.object(forKey: "key \(index)") != Self.payload(index, 0) {
                    Issue.record("key \(index) lost while open")
                }
                try storage.setObject(Self.payload(0, 1), forKey: "key 0")
            }
            let storage = try openDataStore(path)
            #expect(storage.allKeys.count == 3_000)
            for index in 1..<3_000 where (try? storage.object(forKey: "key \(index)")) != Self.payload(index, 0) {
                Issue.record("key \(index) lost after reopening")
            }
        }
    }

    @Test("a sparse key directory of 64 GiB planted in a store is not read into memory: the store opens from its segments")
    func hugeSparseDirectoryIsRefused() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            try Self.makeStore(path, count: 10)
            let fd = open(Self.directoryPath(path), O_WRONLY)
            try #require(fd >= 0)
            let grown = ftruncate(fd, off_t(64) << 30)
            close(fd)
            try #require(grown == 0)
            let storage = try openDataStore(path)
            #expect(storage.allKeys.count == 10)
            #expect(try storage.object(forKey: "key 3") == Self.payload(3, 0))
            #expect(storage.recoveryIssues.contains { if case .corrupted = $0 { true } else { false } })
        }
    }

    // MARK: The shared file

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// One operation of a raw store as the engine's queue hop runs it: a reader catches up first; a
    /// writer in several processes holds the folder's lock and catches up around it.
    static func operation<Result>(_ store: DiskStore, _ body: (DiskStore) throws -> Result) throws -> Result {
        if store.readOnly { store.catchUp() }
        if store.sharedWriters { store.beginSharedOperation() }
        defer { if store.sharedWriters { store.endSharedOperation() } }
        return try body(store)
    }

    static func set(_ store: DiskStore, _ key: String, _ value: String) throws {
        try operation(store) { store in
            try store.writer.write(key, Data(value.utf8), expiry: .distantFuture, now: now, maxSize: 0, durable: false).replaced?.remove()
        }
    }

    static func get(_ store: DiskStore, _ key: String) -> String? {
        (try? operation(store) { try $0.read(key, now: now).data }).map { String(decoding: $0, as: UTF8.self) }
    }

    static func sharedPath(_ path: String) -> String { path + "/" + SharedState.name }

    @Test("a shared file rolled back in place to bytes two writers and a reader have seen: neither the reader nor the other writer serves the past")
    func sharedFileRolledBack() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writerA = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        defer { writerA.close() }
        let writerB = try DiskStore(directory: path, readOnly: false, sharedWriters: true)
        defer { writerB.close() }
        try Self.set(writerA, "old", "old value")
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(Self.get(writerB, "old") == "old value")
        #expect(Self.get(reader, "old") == "old value")
        let saved = Array(try Damage.bytes(Self.sharedPath(path)).prefix(128))
        try Self.operation(writerA) { try $0.writer.removeAll() }
        try Self.set(writerA, "new", "new value")
        try Self.overwriteInPlace(Self.sharedPath(path), with: saved)
        #expect(Self.get(reader, "old") == nil, "the reader read a value removed before its read began")
        #expect(Self.get(reader, "new") == "new value", "the reader missed a write that returned before its read began")
        #expect(Self.get(writerB, "old") == nil, "the other writer read a value removed before its read began")
        #expect(Self.get(writerB, "new") == "new value")
        #expect(Self.get(writerA, "new") == "new value")
    }

    @Test("a reader open while the shared file is deleted sees every later write, of writers in several processes and of a sole writer", arguments: [true, false])
    func readerAcrossDeletedSharedFile(sharedWriters: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false, sharedWriters: sharedWriters)
        defer { writer.close() }
        try Self.set(writer, "k", "1")
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(Self.get(reader, "k") == "1")
        for round in 2...6 {
            try FileManager.default.removeItem(atPath: Self.sharedPath(path))
            writer.log.folderLoss.expire() // a write after a pause: a sole writer checks its files (FolderLossCheck)
            try Self.set(writer, "k", "\(round)")
            try Self.set(writer, "k\(round)", "new")
            #expect(Self.get(reader, "k") == "\(round)", "round \(round): the reader read the past")
            #expect(Self.get(reader, "k\(round)") == "new", "round \(round): the reader missed a key")
        }
        #expect(FileManager.default.fileExists(atPath: Self.sharedPath(path)))
    }

    @Test("a reader beside a sole writer whose shared file is gone (not made anew yet) sees every write")
    func readerWithoutSharedFileBesideSoleWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let writer = try DiskStore(directory: path, readOnly: false)
        defer { writer.close() }
        try Self.set(writer, "k", "0")
        let reader = try DiskStore(directory: path, readOnly: true)
        defer { reader.close() }
        #expect(Self.get(reader, "k") == "0")
        try FileManager.default.removeItem(atPath: Self.sharedPath(path))
        for round in 1...20 {
            try Self.set(writer, "k", "\(round)") // the writer makes a new shared file within 100 ms, or not yet
            #expect(Self.get(reader, "k") == "\(round)", "round \(round): the reader read the past")
        }
    }

    /// Descriptors and mappings of this process that name files under `folder` (Linux: /proc/self).
    static func openFiles(under folder: String) -> (descriptors: Int, mappings: Int)? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd"),
              let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8) else { return nil }
        let descriptors = names.filter { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name))?.hasPrefix(folder) == true
        }.count
        return (descriptors, maps.split(separator: "\n").filter { $0.contains(folder) }.count)
    }

    @Test("moving to a new shared file or a new folder again and again keeps no descriptor or mapping of the old ones", arguments: [true, false])
    func movesKeepNoDescriptors(removeFolder: Bool) throws {
        let directory = TemporaryDirectory()
        let config = directory.diskConfig(sharedWriters: !removeFolder)
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        try storage.setObject(Data("0".utf8), forKey: "k")
        guard let before = Self.openFiles(under: directory.path) else { return } // no /proc (not Linux)
        for round in 1...50 {
            if removeFolder {
                try FileManager.default.removeItem(atPath: directory.storePath())
            } else {
                try FileManager.default.removeItem(atPath: Self.sharedPath(directory.storePath()))
            }
            try storage.setObject(Data("\(round)".utf8), forKey: "k")
            #expect(try storage.object(forKey: "k") == Data("\(round)".utf8))
        }
        BackgroundRelease.finish() // large mappings are unmapped on a thread of their own
        let after = try #require(Self.openFiles(under: directory.path))
        #expect(after.descriptors <= before.descriptors + 2, "descriptors: \(before.descriptors) before, \(after.descriptors) after 50 moves")
        #expect(after.mappings <= before.mappings + 2, "mappings: \(before.mappings) before, \(after.mappings) after 50 moves")
    }
}
