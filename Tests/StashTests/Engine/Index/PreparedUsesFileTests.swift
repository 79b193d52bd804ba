import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

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
    /// off the queue, and with them the file made ready): a store released before then closes at once.
    static func awaitAccessFlush(_ storage: DiskStorage<Data>) {
        _ = storage.entryInfos // on the queue, after what is on it
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
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: 5)
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path)
                for key in Self.keys { try storage.setObject(Self.value(key), forKey: key) }
            }
            var order = Self.keys // least recently used first
            for session in 0..<3 {
                let named = PreparedUsesFile.named.value
                let read = Array(Self.keys.shuffled(using: &random).prefix(400))
                do {
                    let storage = try openDataStore(path)
                    for key in read { #expect(try storage.object(forKey: key) == Self.value(key), "session \(session)") }
                    Self.awaitAccessFlush(storage)
                }
                order = order.filter { !read.contains($0) } + read
                #expect(PreparedUsesFile.named.value > named, "session \(session): the close did not write over a file made ready")
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
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: 9)
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path)
                for key in Self.keys { try storage.setObject(Self.value(key), forKey: key) }
            }
            var order = Self.keys
            let named = PreparedUsesFile.named.value
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
                    order = order.filter { !read.prefix(300).contains($0) } + read.prefix(300)
                }
            }
            // After a compaction nothing but reads changed since its directory: the uses file again.
            #expect((PreparedUsesFile.named.value > named) == (change == .compaction))
            #expect(FileManager.default.fileExists(atPath: Self.usesPath(path)) == (change == .compaction))
            try Self.expectHolds(path, order, "after a \(change)")
        }
    }
}
