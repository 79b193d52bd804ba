import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// The key directory kept as the store goes (``DirectoryBuilder``): a store that wrote many entries
/// closes by naming the file its builder kept, and that file holds exactly what the index held: every
/// entry, its record, its uses (the order of least recent use survives), whatever the store did
/// meanwhile (overwrites, removals, reads, value files, compactions, `removeAll`, files grown).
@Suite("A key directory kept as the store goes", .serialized)
struct KeptDirectoryTests: KeyDirectoryScenario {
    /// What the store should hold: values by key, and the keys least recently used first.
    struct Model {
        var values: [String: Data] = [:]
        var order: [String] = []

        mutating func use(_ key: String) {
            order.removeAll { $0 == key }
            order.append(key)
        }

        mutating func remove(_ key: String) {
            values[key] = nil
            order.removeAll { $0 == key }
        }
    }

    static func value(_ number: Int, _ round: Int) -> Data {
        Data((0..<(20 + (number * 7 + round) % 230)).map { UInt8(truncatingIfNeeded: $0 &+ number &* 31 &+ round) })
    }

    /// The directory at `path`, parsed, if it is intact.
    static func directoryHeader(_ path: String) throws -> DirectoryFormat.Header? {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: directoryPath(path)))
        return bytes.withUnsafeBytes { DirectoryFormat.parse($0) }
    }

    /// Whether the directory at `path` is one a builder kept: its segment list is filled to its room.
    static func wasKept(_ path: String) throws -> Bool {
        try directoryHeader(path)?.segments.count == DirectoryBuilder.segmentRoom
    }

    static func expectHolds(_ storage: DiskStorage<Data>, _ model: Model, _ comment: Comment) throws {
        #expect(storage.recoveryIssues.isEmpty, comment)
        #expect(storage.entryInfos.map(\.key) == model.order, comment)
        // Read least recently used first: the order they leave is the model's again.
        for key in model.order { #expect(try storage.object(forKey: key) == model.values[key], comment) }
        #expect(model.order.count == model.values.count, comment)
    }

    /// Sessions of random operations, each opened anew and checked against the model first (its reads
    /// checked without counting them as use: the order is compared before).
    static func runSessions(_ path: String, seed: UInt64, sessions: Int, operations: Int, valuesAsFiles: Bool,
                            disruptive: Bool) throws -> Int {
        var random = SeededGenerator(seed: seed)
        var model = Model()
        var kept = 0
        let keys = (0..<600).map { "key \($0)" } + keyPool
        for session in 0..<sessions {
            do {
                let storage = try openDataStore(path, valuesAsFiles: valuesAsFiles)
                #expect(storage.recoveryIssues.isEmpty, "session \(session)")
                #expect(storage.entryInfos.map(\.key) == model.order, "session \(session)")
                for operation in 0..<operations {
                    let key = keys[random.below(keys.count)]
                    switch random.below(100) {
                    case 0..<55:
                        let data = value(random.below(1000), session)
                        try storage.setObject(data, forKey: key)
                        model.values[key] = data
                        model.use(key)
                    case 55..<70:
                        try storage.removeObject(forKey: key)
                        model.remove(key)
                    case 70..<97:
                        if let expected = model.values[key] {
                            #expect(try storage.object(forKey: key) == expected, "session \(session), operation \(operation)")
                            model.use(key)
                        }
                    case 97..<99 where disruptive:
                        try storage.compactNow()
                    default:
                        if disruptive, random.below(10) == 0 {
                            try storage.removeAll()
                            model = Model()
                        }
                    }
                }
            }
            if try wasKept(path) { kept += 1 }
            // Checked on a fresh open, then with the reads counted: the order now says they were used.
            let storage = try openDataStore(path, valuesAsFiles: valuesAsFiles)
            try expectHolds(storage, model, "after session \(session)")
        }
        return kept
    }

    @Test("a close after many writes names the kept directory, which holds every entry and its uses", arguments: [false, true])
    func closeNamesTheKeptDirectory(valuesAsFiles: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1, segmentLimit: 16 << 10, directoryBuilderMinimum: 40, keptDirectoryCapacity: 16) {
            let kept = try Self.runSessions(path, seed: valuesAsFiles ? 11 : 7, sessions: 4, operations: 1500, valuesAsFiles: valuesAsFiles,
                                            disruptive: false)
            #expect(kept == 4)
        }
    }

    @Test("compactions and removeAll during the sessions leave the kept directory right", arguments: [UInt64(3), 5, 9])
    func compactionsAndRemoveAll(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, compactionMinimum: 1 << 12, directoryMinimum: 1, segmentLimit: 16 << 10,
                                 directoryBuilderMinimum: 30, keptDirectoryCapacity: 16) {
            _ = try Self.runSessions(path, seed: seed, sessions: 4, operations: 1200, valuesAsFiles: false, disruptive: true)
        }
    }

    @Test("sessions that each write many entries keep the directory's arena the size of its keys, not growing at each")
    func arenaStaysTheSizeOfItsKeys() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1, directoryBuilderMinimum: 40, keptDirectoryCapacity: 16) {
            for session in 0..<6 {
                do {
                    let storage = try openDataStore(path)
                    for number in 0..<100 { try storage.setObject(Self.value(number, session), forKey: "session \(session) key \(number)") }
                }
                #expect(try Self.wasKept(path), "session \(session)")
            }
            // 600 keys of ~18 bytes: an arena of its least size (64 KiB), not one sized from the last one's room.
            let header = try #require(try Self.directoryHeader(path))
            #expect(header.arenaLength <= 1 << 17)
            let storage = try openDataStore(path)
            #expect(storage.recoveryIssues.isEmpty)
            #expect(storage.entryInfos.count == 600)
        }
    }

    @Test("a store that opened with a directory keeps its entries in the next one, with their uses")
    func baseEntriesAndUses() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1, directoryBuilderMinimum: 100, keptDirectoryCapacity: 16) {
            var model = Model()
            do {
                let storage = try openDataStore(path)
                for number in 0..<300 {
                    try storage.setObject(Self.value(number, 0), forKey: "base \(number)")
                    model.values["base \(number)"] = Self.value(number, 0)
                    model.use("base \(number)")
                }
            }
            do {
                let storage = try openDataStore(path)
                for number in stride(from: 0, to: 300, by: 3) {
                    _ = try storage.object(forKey: "base \(number)")
                    model.use("base \(number)")
                }
                for number in stride(from: 1, to: 300, by: 5) {
                    try storage.removeObject(forKey: "base \(number)")
                    model.remove("base \(number)")
                }
                for number in 0..<200 {
                    let key = number % 2 == 0 ? "new \(number)" : "base \(number)"
                    try storage.setObject(Self.value(number, 1), forKey: key)
                    model.values[key] = Self.value(number, 1)
                    model.use(key)
                }
                for number in stride(from: 2, to: 300, by: 7) where model.values["base \(number)"] != nil {
                    _ = try storage.object(forKey: "base \(number)")
                    model.use("base \(number)")
                }
            }
            #expect(try Self.wasKept(path))
            try Self.expectHolds(try openDataStore(path), model, "reopened")
        }
    }
}
