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

/// The key directory and key uses file changed under the store: rewritten in place between sessions and
/// while open, older copies put back; and times that go through every directory path.
@Suite("Key directory and uses files rewritten or put back: right values, and the order or a report", .serialized)
struct DirectoryFilesReplacedTests: ModelSessionScenario {
    enum UsesEdit: String, CaseIterable, CustomTestStringConvertible {
        case flippedUsesByte = "a byte of a uses page flipped"
        case pagesSwapped = "two uses pages swapped"
        case olderCopyBack = "the uses file of a session before copied back"
        case olderCopyAfterWrite = "the uses file of a session before a write copied back"
        case zeroedBody = "the uses zeroed, table kept"
        case tableAndPageFromOlder = "a page and its table entry from an older copy"
        var testDescription: String { rawValue }
    }

    @Test("a key uses file rewritten in place between sessions gives the right values and the model's order, or is reported and replayed",
          arguments: UsesEdit.allCases)
    func usesFileRewritten(edit: UsesEdit) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let usesPath = path + "/" + StoreFolder.usesName
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            var sessions = try ReadSessions(path: path, seed: 99, count: 2000, size: 50)
            let (clock, keys) = (sessions.clock, sessions.keys)
            try sessions.read(600)
            let older = try Damage.bytes(usesPath)
            if edit == .olderCopyAfterWrite {
                let storage = try openDataStore(path, now: clock.function)
                clock.advance(by: 1)
                let data = Self.value(keys[3], 2, size: 50)
                try storage.setObject(data, forKey: keys[3])
                sessions.model.set(keys[3], data)
            }
            try sessions.read(700)
            let model = sessions.model
            var bytes = edit == .olderCopyAfterWrite ? older : try Damage.bytes(usesPath)
            let page = DirectoryFormat.pageLength
            let header = UsesFormat.headerLength
            switch edit {
            case .flippedUsesByte: bytes[header + page + 9] ^= 0x10
            case .pagesSwapped:
                let first = Array(bytes[header..<(header + page)])
                let second = Array(bytes[(header + page)..<(header + 2 * page)])
                bytes.replaceSubrange(header..<(header + page), with: second)
                bytes.replaceSubrange((header + page)..<(header + 2 * page), with: first)
            case .olderCopyBack, .olderCopyAfterWrite: bytes = older
            case .zeroedBody:
                let tableStart = bytes.count - DirectoryFormat.pageCount(bytes.count - header) * 8
                for index in header..<max(header, tableStart - 8) { bytes[index] = 0 }
            case .tableAndPageFromOlder:
                // Page 0 and its hash from the older copy, the rest from the newer: every page verifies on its own.
                #expect(older.count == bytes.count)
                let body = bytes.count - header
                let tableStart = header + body - DirectoryFormat.pageCount(body) * 8
                bytes.replaceSubrange(header..<(header + page), with: older[header..<(header + page)])
                bytes.replaceSubrange(tableStart..<(tableStart + 8), with: older[tableStart..<(tableStart + 8)])
            }
            // The same file, the same size (or an older copy's).
            try Damage.overwriteInPlace(usesPath, with: bytes, truncating: true)
            let storage = try openDataStore(path, now: clock.function)
            let issues = storage.recoveryIssues
            // Reads first (off the queue, a page at a time), the order after.
            for key in keys {
                #expect(try Self.read(storage, key) == model.values[key], "\(edit): \(key)")
            }
            if issues.isEmpty, edit != .olderCopyBack, edit != .olderCopyAfterWrite {
                Issue.record("\(edit) was not reported")
            }
            // The reads above used every key in the model's order of keys: recompute.
            var after = model
            for key in keys { after.use(key) }
            #expect(storage.entryInfos.map(\.key) == after.order, "\(edit): \(issues)")
        }
    }

    @Test("a key uses file rewritten in place while a store has it open and has read part of it: values right, order right or reported",
          arguments: UsesEdit.allCases)
    func usesFileRewrittenWhileOpen(edit: UsesEdit) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let usesPath = path + "/" + StoreFolder.usesName
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            var sessions = try ReadSessions(path: path, seed: 17, count: 3000, size: 30)
            let (clock, keys) = (sessions.clock, sessions.keys)
            try sessions.read(800)
            let older = try Damage.bytes(usesPath)
            try sessions.read(800)
            var model = sessions.model
            let newer = try Damage.bytes(usesPath)
            var bytes = newer
            let header = UsesFormat.headerLength
            switch edit {
            case .olderCopyBack, .olderCopyAfterWrite, .tableAndPageFromOlder: bytes = older
            case .flippedUsesByte: for index in stride(from: header + 9, to: bytes.count - 100, by: DirectoryFormat.pageLength) { bytes[index] ^= 0x10 }
            case .pagesSwapped, .zeroedBody:
                for index in header..<(bytes.count - DirectoryFormat.pageCount(bytes.count - header) * 8 - 8) { bytes[index] = 0 }
            }
            // The store opens (lazily: header and tables), reads one key off the queue, then the file changes in place.
            let storage = try openDataStore(path, now: clock.function)
            let first = keys[0]
            #expect(try Self.read(storage, first) == model.values[first])
            model.use(first)
            try Damage.overwriteInPlace(usesPath, with: bytes)
            for key in keys.dropFirst() {
                #expect(try Self.read(storage, key) == model.values[key], "\(edit): \(key)")
            }
            for key in keys.dropFirst() { model.use(key) }
            let issues = storage.recoveryIssues
            let order = storage.entryInfos.map(\.key)
            if issues.isEmpty {
                #expect(order == model.order, "\(edit): order differs and nothing was reported")
            }
            #expect(Set(order) == Set(model.values.keys))
        }
    }

    enum PutBack: String, CaseIterable, CustomTestStringConvertible {
        case pairAfterWrites = "an older directory and its uses, after sessions that wrote"
        case pairAfterCompaction = "an older directory and its uses, after a compaction"
        case usesOnlyAfterReads = "an older uses file, after sessions that read, with the directory unchanged"
        case directoryOnly = "an older directory alone, beside a newer uses file"
        var testDescription: String { rawValue }
    }

    @Test("an older key directory and key uses file put back (a backup restored beside newer segments): right values, and the model's order or a report",
          arguments: PutBack.allCases)
    func olderFilesPutBack(putBack: PutBack) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: 5)
        let keys = (0..<1200).map { "o\($0)" }
        var model = Model()
        var version = 0
        let directoryPath = path + "/" + StoreFolder.directoryName
        let usesPath = path + "/" + StoreFolder.usesName
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            func session(reads: Int, writes: Int, removals: Int = 0, compact: Bool = false) throws {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<writes {
                    let key = keys[random.below(keys.count)]
                    version += 1
                    clock.advance(by: 1)
                    let data = Self.value(key, version, size: 30 + random.below(90))
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
                for _ in 0..<removals {
                    let key = keys[random.below(keys.count)]
                    try storage.removeObject(forKey: key)
                    model.remove(key)
                }
                if compact { try storage.compactNow() }
                for _ in 0..<reads {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    #expect(try Self.read(storage, key) == model.values[key])
                    model.use(key)
                }
            }
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    version += 1
                    clock.advance(by: 1)
                    let data = Self.value(key, version, size: 40)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            try session(reads: 500, writes: 0)
            #expect(FileManager.default.fileExists(atPath: usesPath))
            let olderDirectory = try Damage.bytes(directoryPath)
            let olderUses = try Damage.bytes(usesPath)
            switch putBack {
            case .pairAfterWrites:
                try session(reads: 300, writes: 200, removals: 50)
                try session(reads: 500, writes: 0)
            case .pairAfterCompaction:
                try session(reads: 100, writes: 300, removals: 80, compact: true)
                try session(reads: 500, writes: 0)
            case .usesOnlyAfterReads:
                try session(reads: 500, writes: 0)
                try session(reads: 500, writes: 0)
            case .directoryOnly:
                try session(reads: 200, writes: 100, removals: 30)
                try session(reads: 500, writes: 0)
            }
            if putBack != .usesOnlyAfterReads { try Damage.write(olderDirectory, to: directoryPath) }
            if putBack != .directoryOnly { try Damage.write(olderUses, to: usesPath) }
            let storage = try openDataStore(path, now: clock.function)
            let issues = storage.recoveryIssues
            #expect(Set(storage.allKeys) == Set(model.values.keys), "\(putBack): \(issues)")
            let order = storage.entryInfos.map(\.key)
            if issues.isEmpty { #expect(order == model.order, "\(putBack): the order differs and nothing was reported") }
            for key in keys { #expect(try Self.read(storage, key) == model.values[key], "\(putBack): \(key)") }
        }
    }

    @Test("fractional expiries come back equal through a kept directory sealed at close, a uses file and a compaction's directory")
    func fractionalExpiriesThroughEveryDirectoryPath() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let start = clock.now
        let expiries: [Expiry] = [.seconds(0.1), .seconds(0.001), .seconds(60.123), .seconds(86_400.999),
                                  .date(Date(timeIntervalSinceReferenceDate: 1_234_567_890.123_456_7))]
        func date(_ expiry: Expiry) -> Date {
            switch expiry {
            case .seconds(let seconds): return start.addingTimeInterval(seconds)
            case .date(let date): return date
            case .never: return .distantFuture
            }
        }
        let filler = (0..<300).map { "f\($0)" }
        func expectExact(_ comment: String) throws {
            let storage = try openDataStore(path, now: clock.function)
            #expect(storage.recoveryIssues.isEmpty, "\(comment): \(storage.recoveryIssues)")
            let infos = Dictionary(uniqueKeysWithValues: storage.entryInfos.map { ($0.key, $0.expiry) })
            for (number, expiry) in expiries.enumerated() {
                let key = "e\(number)"
                clock.set(start)
                #expect(try storage.entry(forKey: key).expiry == .date(date(expiry)), "\(comment): \(key)")
                #expect(infos[key] == .date(date(expiry)), "\(comment): \(key) in entryInfos")
                clock.set(Date(timeIntervalSinceReferenceDate: date(expiry).timeIntervalSinceReferenceDate.nextDown))
                #expect(try !storage.isExpiredObject(forKey: key), "\(comment): \(key) expired early")
                clock.set(date(expiry))
                #expect(try storage.isExpiredObject(forKey: key), "\(comment): \(key) not expired at its date")
            }
            clock.set(start)
        }
        try withEngineThresholds(in: path, directoryMinimum: 1, directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in filler { try storage.setObject(Self.value(key, 1, size: 30), forKey: key) }
                for (number, expiry) in expiries.enumerated() { try storage.setObject(Data("e".utf8), forKey: "e\(number)", expiry: expiry) }
                _ = storage.entryInfos
                #expect(storage.engine.sync { $0.directoryBuilder != nil }, "no directory was kept as the store went")
            }
            try expectExact("after a kept directory")
            do {
                // Sessions that only read: a uses file (made ready ahead) in the directory's place.
                let storage = try openDataStore(path, now: clock.function)
                for key in filler { _ = try Self.read(storage, key) }
                _ = storage.entryInfos
            }
            #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFolder.usesName))
            try expectExact("after a uses file")
            do {
                // Written again over base entries, then a batch, a compaction, and more writes kept.
                let storage = try openDataStore(path, now: clock.function)
                for key in filler.prefix(40) { try storage.setObject(Self.value(key, 2, size: 30), forKey: key) }
                for (number, expiry) in expiries.enumerated() { try storage.setObject(Data("e2".utf8), forKey: "e\(number)", expiry: expiry) }
                try storage.compactNow()
                for key in filler.suffix(40) { try storage.setObject(Self.value(key, 3, size: 30), forKey: key) }
            }
            try expectExact("after writes over base entries, a compaction and a kept directory")
        }
    }
}

/// A store of keys written once, then sessions that read random ones (each opens the store and closes
/// it: the close writes the key uses file), with a model of values and order.
private struct ReadSessions: ModelSessionScenario {
    let path: String
    let clock = TestClock()
    let keys: [String]
    var random: SeededGenerator
    var model = StoreModel()

    init(path: String, seed: UInt64, count: Int, size: Int) throws {
        (self.path, keys, random) = (path, (0..<count).map { "key \($0)" }, SeededGenerator(seed: seed))
        let storage = try openDataStore(path, now: clock.function)
        for key in keys {
            clock.advance(by: 1)
            let data = Self.value(key, 1, size: size)
            try storage.setObject(data, forKey: key)
            model.set(key, data)
        }
    }

    /// A session of `count` reads of random keys.
    mutating func read(_ count: Int) throws {
        let storage = try openDataStore(path, now: clock.function)
        for _ in 0..<count {
            let key = keys[random.below(keys.count)]
            clock.advance(by: 1)
            #expect(try Self.read(storage, key) == model.values[key])
            model.use(key)
        }
    }
}
