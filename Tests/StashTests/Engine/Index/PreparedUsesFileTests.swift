import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key uses file made ready ahead (``PreparedUsesFile``): a store that only read writes its uses at
/// close over a file made ready while it read, and that file says what a uses file written at close says;
/// a store that changed anything after it was made ready writes a directory instead, and the file goes.
@Suite("A key uses file made ready ahead", .serialized)
struct PreparedUsesFileTests: KeyDirectoryScenario {
    /// Keys of every kind, one spelling each (the pool's canonically equivalent ones are one key).
    static let keys = ((0..<600).map { "key \($0)" } + keyPool).reduce(into: [String]()) { keys, key in
        if !keys.contains(key) { keys.append(key) }
    }

    static func value(_ key: String) -> Data { Data((key + " value").utf8) + Data(repeating: UInt8(key.utf8.count), count: 60) }

    static func usesPath(_ path: String) -> String { path + "/" + StoreFolder.usesName }

    /// Returns once the store's queue has run what reads left it (access records written, every 256 reads
    /// off the queue, and with them the file made ready), and that file is filled: a store released before
    /// then closes at once, and a close does not wait for a fill (on a loaded machine it came first).
    static func awaitAccessFlush(_ storage: DiskStorage<Data>) {
        _ = storage.entryInfos // on the queue, after what is on it
        PreparedUsesFile.finishFills()
    }

    /// Runs `body` with the path of a store (closed) that holds every key of ``keys``, written in order,
    /// in a fresh folder, keeping a directory whatever its size and making its uses files ready whatever
    /// theirs.
    static func withFilledStore(_ body: (_ path: String) throws -> Void) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path)
                for key in keys { try storage.setObject(value(key), forKey: key) }
            }
            try body(path)
        }
    }

    /// The file number (inode) of the uses file `storage` made ready; nil if it has none.
    static func preparedFileNumber(_ storage: DiskStorage<Data>) -> UInt64? {
        storage.engine.sync { store in
            store.preparedUses.flatMap { FileIO.fileStatus($0.fd) }.map { UInt64($0.st_ino) }
        }
    }

    /// The file number (inode) of the file at `path`; nil if there is none.
    static func fileNumber(_ path: String) -> UInt64? {
        var info = stat()
        return stat(path, &info) == 0 ? UInt64(info.st_ino) : nil
    }

    /// Opens `path` and checks its values and its order of least recent use against `order`.
    static func expectHolds(_ path: String, _ order: [String], _ comment: Comment) throws {
        let storage = try openDataStore(path)
        #expect(storage.recoveryIssues.isEmpty, comment)
        #expect(storage.entryInfos.map(\.key) == order, comment)
        for key in order { #expect(try storage.object(forKey: key) == value(key), comment) }
    }

    @Test("a close after reads alone writes the uses over the file made ready, and the next open has their order")
    func closeAfterReadsNamesThePreparedFile() throws {
        var random = SeededGenerator(seed: 5)
        try Self.withFilledStore { path in
            var order = Self.keys // least recently used first
            for session in 0..<3 {
                let read = Array(Self.keys.shuffled(using: &random).prefix(400))
                let prepared: UInt64?
                do {
                    let storage = try openDataStore(path)
                    for key in read { #expect(try storage.object(forKey: key) == Self.value(key), "session \(session)") }
                    Self.awaitAccessFlush(storage)
                    prepared = Self.preparedFileNumber(storage)
                }
                order = order.filter { !read.contains($0) } + read
                #expect(prepared != nil, "session \(session): no file was made ready")
                #expect(Self.fileNumber(Self.usesPath(path)) == prepared, "session \(session): the close did not write over the file made ready")
                #expect(FileManager.default.fileExists(atPath: Self.usesPath(path)), "session \(session)")
                #expect(!FileManager.default.fileExists(atPath: Self.usesPath(path) + ".tmp"), "session \(session)")
                // Checked on a fresh open; the check's reads are uses too, in the order it reads.
                try Self.expectHolds(path, order, "after session \(session)")
            }
        }
    }

    enum Change: String, CaseIterable, CustomTestStringConvertible {
        case write, removal, compaction
        var testDescription: String { rawValue }
    }

    @Test("a change after the file was made ready: the close writes a directory, not that file", arguments: Change.allCases)
    func changeAfterItWasMadeReady(change: Change) throws {
        var random = SeededGenerator(seed: 9)
        try Self.withFilledStore { path in
            var order = Self.keys
            var prepared: UInt64?
            let read = Array(Self.keys.shuffled(using: &random).prefix(400))
            do {
                let storage = try openDataStore(path)
                for key in read { _ = try storage.object(forKey: key) }
                Self.awaitAccessFlush(storage)
                order = order.filter { !read.contains($0) } + read
                switch change {
                case .write:
                    try storage.setObject(Self.value(Self.keys[0]), forKey: Self.keys[0])
                    order = order.filter { $0 != Self.keys[0] } + [Self.keys[0]]
                case .removal:
                    try storage.removeObject(forKey: Self.keys[1])
                    order.removeAll { $0 == Self.keys[1] }
                case .compaction:
                    try storage.compactNow()
                    // The reads after the compaction make another file ready, for the directory it wrote.
                    for key in read.prefix(300) { _ = try storage.object(forKey: key) }
                    Self.awaitAccessFlush(storage)
                    prepared = Self.preparedFileNumber(storage)
                    order = order.filter { !read.prefix(300).contains($0) } + read.prefix(300)
                }
            }
            // After a compaction nothing but reads changed since its directory: the uses file again, the
            // one made ready for the compaction's directory.
            #expect(FileManager.default.fileExists(atPath: Self.usesPath(path)) == (change == .compaction))
            if change == .compaction {
                #expect(prepared != nil)
                #expect(Self.fileNumber(Self.usesPath(path)) == prepared)
            }
            try Self.expectHolds(path, order, "after a \(change)")
        }
    }

    /// Calls that change nothing: the file made ready stays, and the close writes over it.
    enum NoChange: String, CaseIterable, CustomTestStringConvertible {
        case absentKeyRemoved = "a removal of a key that is not there"
        case refusedWrite = "a write refused (a key over the limit)"
        case emptyBatch = "an empty batch"
        var testDescription: String { rawValue }
    }

    @Test("a call that changes nothing keeps the file made ready: the close still writes over it", arguments: NoChange.allCases)
    func callThatChangesNothing(call: NoChange) throws {
        var random = SeededGenerator(seed: 13)
        try Self.withFilledStore { path in
            let read = Array(Self.keys.shuffled(using: &random).prefix(400))
            let prepared: UInt64?
            do {
                let storage = try openDataStore(path)
                for key in read { _ = try storage.object(forKey: key) }
                Self.awaitAccessFlush(storage)
                prepared = Self.preparedFileNumber(storage)
                switch call {
                case .absentKeyRemoved: try storage.removeObject(forKey: "not stored")
                case .refusedWrite: #expect(throws: StorageError.self) { try storage.setObject(Data([1]), forKey: String(repeating: "k", count: (1 << 20) + 1)) }
                case .emptyBatch: try storage.write(StorageBatch<Data>())
                }
                #expect(Self.preparedFileNumber(storage) == prepared, "\(call) let the file made ready go")
            }
            #expect(prepared != nil)
            #expect(Self.fileNumber(Self.usesPath(path)) == prepared, "after \(call), the close did not write over the file made ready")
            try Self.expectHolds(path, Self.keys.filter { !read.contains($0) } + read, "after \(call)")
        }
    }

    @Test("a write that takes the memory layer's hits on its way does not make a file ready for the close it just ruled out")
    func writeAfterMemoryHitsMakesNoFile() throws {
        try Self.withFilledStore { path in
            let disk = try openDataStore(path)
            let storage = Storage(hybridStorage: HybridStorage(memoryStorage: MemoryStorage<Data>(config: MemoryConfig()), diskStorage: disk))
            let read = Array(Self.keys.prefix(400))
            for key in read { _ = try storage.object(forKey: key) } // from disk: a file made ready
            Self.awaitAccessFlush(disk)
            let madeReady = disk.engine.sync { $0.usesFilesMadeReady }
            #expect(madeReady == 1)
            for key in read { _ = try storage.object(forKey: key) } // from memory: hits the write records
            try storage.setObject(Self.value("new"), forKey: "new")
            #expect(disk.engine.sync { ($0.usesFilesMadeReady, $0.preparedUses == nil) } == (madeReady, true))
        }
    }
}

/// On a full disk, a uses file made ready never holds space the store needs: its blocks go back as soon
/// as a change comes, and where the disk could not hold it whole.
@Suite("A key uses file made ready ahead, on a full disk", .serialized)
struct PreparedUsesFileFullDiskTests {
    static let count = 13_000 // ~300 KB of uses

    /// A store of ``count`` entries, closed with its directory, in a tmpfs of 16 MiB mounted for the test.
    static func withSmallDisk(_ body: (_ mountPoint: String, _ path: String) throws -> Void) throws {
        try FullDiskTests.withMountedTmpfs(size: "16m") { mountPoint in
            let path = mountPoint + "/store"
            try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
                do {
                    let storage = try openDataStore(path)
                    for number in 0..<count { try storage.setObject(Data("value \(number)".utf8), forKey: "key \(number)") }
                }
                try body(mountPoint, path)
            }
        }
    }

    @Test("a write that needs the space a uses file made ready holds gets it: the file goes before the write",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"))
    func writeGetsItsSpace() throws {
        try Self.withSmallDisk { mountPoint, path in
            do {
                let storage = try openDataStore(path)
                for number in 0..<Self.count { _ = try storage.object(forKey: "key \(number)") }
                PreparedUsesFileTests.awaitAccessFlush(storage)
                // Room for the value's file only with the uses file's blocks (~300 KB) given back.
                try FullDiskTests.fill(mountPoint, leaving: 100_000)
                try storage.setObject(Data(repeating: 7, count: 280_000), forKey: "big")
                try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            }
            let storage = try openDataStore(path)
            #expect(storage.recoveryIssues.isEmpty)
            #expect(try storage.object(forKey: "big") == Data(repeating: 7, count: 280_000))
            #expect(try storage.object(forKey: "key 12") == Data("value 12".utf8))
        }
    }

    @Test("a uses file the disk cannot hold whole gives back what it took",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"))
    func failedFillGivesItsSpaceBack() throws {
        try Self.withSmallDisk { mountPoint, path in
            try FullDiskTests.fill(mountPoint, leaving: 200_000)
            let before = FullDiskTests.freeBytes(mountPoint)
            do {
                let storage = try openDataStore(path)
                // Past an eighth of the entries (the access records, ~40 bytes each, take ~80 KB).
                for number in 0..<2_000 { _ = try storage.object(forKey: "key \(number)") }
                PreparedUsesFileTests.awaitAccessFlush(storage)
                #expect(FullDiskTests.freeBytes(mountPoint) >= before - 120_000, "the uses file kept the blocks it took")
            }
            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
            let storage = try openDataStore(path)
            #expect(storage.recoveryIssues.isEmpty)
            #expect(try storage.object(forKey: "key 12") == Data("value 12".utf8))
        }
    }
}
