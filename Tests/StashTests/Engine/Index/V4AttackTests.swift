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

/// Held-out attacks on the disk engine v4 (reads off the queue, mapped segments, a key directory kept as
/// the store goes and checked a page at a time, a key uses file made ready ahead, readers following a
/// shared file): random sessions against a model, the uses file rewritten between sessions and while a
/// store has it open, readers beside a writer, and eviction after sessions that only read.
@Suite("Sessions against a model: values, order of least recent use, files left (disk engine v4)", .serialized)
struct V4AttackTests {
    /// The value written for `key` at `version`: it names its key, so a value of another key is seen.
    static func value(_ key: String, _ version: Int, size: Int) -> Data {
        var data = Data("\(key)#\(version)|".utf8)
        if data.count < size { data.append(Data(repeating: UInt8(truncatingIfNeeded: version &* 31 &+ key.utf8.count), count: size - data.count)) }
        return data
    }

    /// The value stored for `key`, nil if there is none; other errors are thrown.
    static func read(_ storage: DiskStorage<Data>, _ key: String) throws -> Data? {
        do {
            return try storage.object(forKey: key)
        } catch StorageError.notFound {
            return nil
        }
    }

    /// Names in the store folder that are not the store's files (temporary ones included).
    static func strayFiles(_ path: String, allowingUnpublished: Bool = false) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.filter { name in
            !((allowingUnpublished && name.hasSuffix(SegmentFile.unpublishedSuffix)) || SegmentFile.id(ofName: name) != nil || DiskStore.isValueFileName(name) || name == StoreFolder.markerName
              || name == StoreFolder.directoryName || name == StoreFolder.usesName || name == SharedState.name)
        }.sorted()
    }

    /// A model of the store: values, and keys least recently used first.
    struct Model {
        var values: [String: Data] = [:]
        var order: [String] = []

        mutating func use(_ key: String) {
            guard values[key] != nil else { return }
            order.removeAll { $0 == key }
            order.append(key)
        }

        mutating func set(_ key: String, _ data: Data) {
            values[key] = data
            use(key)
        }

        mutating func remove(_ key: String) {
            values[key] = nil
            order.removeAll { $0 == key }
        }

        mutating func clear() { self = Model() }

        /// Live value bytes, as `maxSize` counts them.
        var totalSize: Int { values.values.reduce(0) { $0 + $1.count } }

        /// What a trim to `limit` leaves: the least recently used go first until the rest fit.
        mutating func trim(to limit: Int) {
            var total = totalSize
            while total > limit, let first = order.first {
                total -= values[first]?.count ?? 0
                remove(first)
            }
        }

        /// Keeps the keys `kept` (what a trim left): they must be the most recently used, the ones gone the least.
        mutating func trimmed(to kept: Set<String>) -> Bool {
            let gone = order.filter { !kept.contains($0) }
            let isSuffix = order.suffix(kept.count).allSatisfy(kept.contains) && kept.allSatisfy { values[$0] != nil }
            for key in gone { remove(key) }
            return isSuffix
        }
    }

    /// Checks the store against the model: every value, the keys, and the order of least recent use.
    static func expectMatches(_ storage: DiskStorage<Data>, _ model: inout Model, checkOrder: Bool, _ comment: Comment) throws {
        let infos = storage.entryInfos.map(\.key)
        #expect(Set(storage.allKeys) == Set(model.values.keys), comment)
        if checkOrder { #expect(infos == model.order, comment) }
        // Read in the model's order: the reads keep it.
        for key in model.order {
            let got = try Self.read(storage, key)
            #expect(got == model.values[key], "\(comment): \(key)")
        }
    }

    // MARK: 1. Random sessions against a model

    /// A random session script's settings: seed, and the `maxSize` of every session (0: none).
    struct Run: Sendable, CustomTestStringConvertible {
        var seed: UInt64
        var maxSize: Int
        var testDescription: String { "seed \(seed), maxSize \(maxSize)" }
    }

    static let runs: [Run] = (1...6).map { Run(seed: $0, maxSize: 0) } + (7...12).map { Run(seed: $0, maxSize: 60_000 + Int($0) * 7_000) }

    @Test("random sessions of reads, writes, removals, removeAll, compaction, trims, a folder removed and reopens match a model, and leave no stray file",
          arguments: runs)
    func randomSessions(run: Run) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let seed = run.seed
        var random = SeededGenerator(seed: seed &* 7919)
        let keys = (0..<700).map { "k\($0)" } + ["", "a/b", "..", "caf\u{E9}", "cafe\u{301}", "\u{1100}\u{1161}", "\u{AC00}", "\u{0}nul", "k1\u{0}"]
        var model = Model()
        var version = 0
        let limit = run.maxSize
        /// A value's size: now and then one kept in a file of its own (but never more than a tenth of the limit).
        func size() -> Int {
            let big = random.below(12) == 0
            let size = big ? 70_000 + random.below(1000) : 20 + random.below(300)
            return limit > 0 ? min(size, limit / 10) : size
        }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            // A filled store, so that sessions that only read have a directory to write uses for.
            do {
                let storage = try openDataStore(path, maxSize: limit, now: clock.function)
                for key in keys.prefix(600) {
                    version += 1
                    clock.advance(by: 1)
                    let data = Self.value(key, version, size: 40 + random.below(200))
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                    if limit > 0 { model.trim(to: limit) }
                }
            }
            for session in 0..<14 {
                var folderGone = false
                var orderKnown = true
                do {
                    let storage = try openDataStore(path, maxSize: limit, now: clock.function)
                    let comment: Comment = "seed \(seed) session \(session) at open"
                    #expect(storage.recoveryIssues.isEmpty, "\(comment): \(storage.recoveryIssues)")
                    try Self.expectMatches(storage, &model, checkOrder: true, comment)
                    let readOnlySession = random.below(3) == 0
                    let steps = 3 + random.below(8)
                    for step in 0..<steps {
                        let comment: Comment = "seed \(seed) session \(session) step \(step)"
                        let choice = readOnlySession ? 0 : random.below(100)
                        clock.advance(by: 1)
                        switch choice {
                        case 0..<45:
                            // Reads: enough, often, for the close to write uses (and for a file made ready).
                            let count = 1 + random.below(500)
                            for _ in 0..<count {
                                let key = keys[random.below(keys.count)]
                                clock.advance(by: 0.001)
                                let got = try Self.read(storage, key)
                                if folderGone {
                                    #expect(got == nil || got == model.values[key], "\(comment): \(key) after the folder went")
                                } else {
                                    #expect(got == model.values[key], "\(comment): \(key)")
                                    model.use(key)
                                }
                            }
                        case 45..<68:
                            let key = keys[random.below(keys.count)]
                            version += 1
                            let data = Self.value(key, version, size: size())
                            try storage.setObject(data, forKey: key)
                            if folderGone { (model, folderGone) = (Model(), false) }
                            model.set(key, data)
                            if limit > 0 {
                                if orderKnown {
                                    model.trim(to: limit)
                                    #expect(Set(storage.allKeys) == Set(model.values.keys), "\(comment): the trim after \(key)")
                                } else {
                                    let kept = Set(storage.allKeys)
                                    for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                                }
                            }
                        case 68..<76:
                            let key = keys[random.below(keys.count)]
                            try storage.removeObject(forKey: key)
                            model.remove(key)
                        case 76..<80:
                            if folderGone { break }
                            let target = model.totalSize * (1 + random.below(9)) / 10
                            try storage.trim(toSize: target)
                            if orderKnown {
                                model.trim(to: target)
                                #expect(Set(storage.allKeys) == Set(model.values.keys), "\(comment): trim(toSize: \(target))")
                            } else {
                                let kept = Set(storage.allKeys)
                                for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                            }
                        case 80..<86:
                            if folderGone { _ = try? storage.compactNow() } else { try storage.compactNow() }
                        case 86..<89:
                            try storage.removeAll()
                            (model, folderGone) = (Model(), false)
                        case 89..<93:
                            // Another program removes the folder between two calls.
                            try? FileManager.default.removeItem(atPath: path)
                            folderGone = true
                            orderKnown = false
                        default:
                            // A batch of writes (in an order of the store's own: the model takes it from the store).
                            var batch: [String: Data] = [:]
                            for _ in 0..<(1 + random.below(40)) {
                                let key = keys[random.below(keys.count)]
                                version += 1
                                batch[key] = Self.value(key, version, size: 10 + random.below(400))
                            }
                            try storage.setObjects(batch)
                            if folderGone { (model, folderGone) = (Model(), false) }
                            for (key, data) in batch { model.set(key, data) }
                            let kept = Set(storage.allKeys)
                            for gone in model.values.keys where !kept.contains(gone) { model.remove(gone) }
                            orderKnown = false
                        }
                        if !orderKnown && !folderGone {
                            // Taken from the store: checked again across the next reopen.
                            model.order = storage.entryInfos.map(\.key)
                            #expect(Set(model.order) == Set(model.values.keys), "\(comment)")
                            orderKnown = true
                        }
                    }
                    if !folderGone {
                        // The order the store has before its close is the model's (the reopen must keep it).
                        let before = storage.entryInfos.map(\.key)
                        #expect(before == model.order, "seed \(seed) session \(session) before the close: first difference at \(Array(zip(before, model.order)).firstIndex { $0.0 != $0.1 } ?? -1)")
                    }
                }
                if folderGone {
                    // The folder went and nothing wrote after: the store at the path is a new one, empty.
                    model.clear()
                }
                let comment: Comment = "seed \(seed) after session \(session)"
                // A background compaction's copy may outlive the close: its unpublished output goes at the next open.
                #expect(Self.strayFiles(path, allowingUnpublished: true).isEmpty, "\(comment): \(Self.strayFiles(path))")
            }
            let storage = try openDataStore(path, maxSize: limit, now: clock.function)
            try Self.expectMatches(storage, &model, checkOrder: true, "seed \(seed) at the end")
            storage.settleCompaction()
            #expect(Self.strayFiles(path).isEmpty, "at the end: \(Self.strayFiles(path))")
        }
    }

    // MARK: 4. Eviction after sessions that only read

    @Test("a trim by maxSize after sessions that only read (uses files, made ready ahead) evicts the least recently used first",
          arguments: [11, 12, 13] as [UInt64])
    func evictionAfterReadOnlySessions(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<800).map { "key \($0)" }
        var model = Model()
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 200)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            for session in 0..<4 {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<(150 + random.below(400)) {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    #expect(try Self.read(storage, key) == model.values[key], "session \(session)")
                    model.use(key)
                }
                _ = storage.entryInfos
            }
            #expect(FileManager.default.fileExists(atPath: path + "/" + StoreFolder.usesName), "no uses file was written")
            // Opened with room for about half: a write trims.
            let total = try openDataStore(path, now: clock.function).totalSize
            let storage = try openDataStore(path, maxSize: total / 2, now: clock.function)
            clock.advance(by: 1)
            let data = Self.value("new", 2, size: 200)
            try storage.setObject(data, forKey: "new")
            model.set("new", data)
            let kept = Set(storage.allKeys)
            #expect(kept.count < keys.count, "nothing was trimmed")
            let leastRecentWentFirst = model.trimmed(to: kept)
            #expect(leastRecentWentFirst, "the trim did not take the least recently used first")
            #expect(storage.entryInfos.map(\.key) == model.order)
        }
    }

    // MARK: 2. The uses file rewritten between sessions

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
        let clock = TestClock()
        var random = SeededGenerator(seed: 99)
        let keys = (0..<2000).map { "key \($0)" }
        var model = Model()
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 50)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            func readSession(_ count: Int) throws {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<count {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    #expect(try Self.read(storage, key) == model.values[key])
                    model.use(key)
                }
            }
            try readSession(600)
            let older = try Damage.bytes(usesPath)
            if edit == .olderCopyAfterWrite {
                let storage = try openDataStore(path, now: clock.function)
                clock.advance(by: 1)
                let data = Self.value(keys[3], 2, size: 50)
                try storage.setObject(data, forKey: keys[3])
                model.set(keys[3], data)
            }
            try readSession(700)
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
            // In place, as `dd conv=notrunc` writes: the same file, the same size (or an older copy's).
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: usesPath))
            try handle.write(contentsOf: Data(bytes))
            try handle.truncate(atOffset: UInt64(bytes.count))
            try handle.close()
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
        let clock = TestClock()
        var random = SeededGenerator(seed: 17)
        let keys = (0..<3000).map { "key \($0)" }
        var model = Model()
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 30)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            func readSession(_ count: Int) throws {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<count {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 1)
                    #expect(try Self.read(storage, key) == model.values[key])
                    model.use(key)
                }
            }
            try readSession(800)
            let older = try Damage.bytes(usesPath)
            try readSession(800)
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
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: usesPath))
            try handle.write(contentsOf: Data(bytes))
            try handle.close()
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

    // MARK: 3. Readers beside the writer

    @Test("a reader process follows a writer across its sessions: reads that make uses files ready, compactions, closes and reopens; every answer is a write of its key, the latest once it returned")
    func readerProcessAcrossWriterSessions() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: 31)
        let keys = (0..<1200).map { "p\($0)" }
        // Each write's length is its own: the reader's answer names the write.
        var nextLength = 1000
        var lengths: [String: Set<Int>] = [:]
        var current: [String: Int] = [:]
        func write(_ storage: DiskStorage<Data>, _ key: String) throws {
            nextLength += 1 + random.below(3)
            try storage.setObject(Self.value(key, nextLength, size: nextLength), forKey: key)
            lengths[key, default: []].insert(nextLength)
            current[key] = nextLength
        }
        try withEngineThresholds(in: path, compactionMinimum: 64 << 10, directoryMinimum: 1, segmentLimit: 256 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let writer = try openDataStore(path)
                for key in keys { try write(writer, key) }
            }
            let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
            let reader = try ChildProcess(tool, ["follow", path], input: .held)
            let watchdog = Watchdog(reader, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(reader.readLine() == "ready", "\(reader.errors)")
            func ask(_ key: String, exact: Bool, _ comment: String) -> Bool {
                let answer = reader.ask("get \(key)")
                let words = answer.split(separator: " ")
                let length = words.count == 3 && words[0] == "got" ? Int(words[2]) : nil
                let good = exact ? length == current[key] : length.map { lengths[key]?.contains($0) == true } ?? false
                #expect(good, "\(comment): \(key) answered \(answer), latest \(current[key] ?? -1): \(reader.errors)")
                return good
            }
            for session in 0..<6 {
                let writer = try openDataStore(path)
                let readOnlySession = session % 2 == 0
                for step in 0..<30 {
                    if readOnlySession || random.below(3) == 0 {
                        for _ in 0..<120 {
                            let key = keys[random.below(keys.count)]
                            #expect(try Self.read(writer, key).map(\.count) == current[key])
                        }
                    } else if random.below(6) == 0 {
                        try writer.compactNow()
                    } else {
                        let key = keys[random.below(keys.count)]
                        try write(writer, key)
                        guard ask(key, exact: true, "session \(session) step \(step), after the write") else { return }
                    }
                    for _ in 0..<4 {
                        guard ask(keys[random.below(keys.count)], exact: false, "session \(session) step \(step)") else { return }
                    }
                }
            }
            // The writer closed: the reader reads what it left.
            for key in keys.shuffled(using: &random).prefix(200) {
                guard ask(key, exact: true, "after the last close") else { return }
            }
            // A writer opens again and only reads (a uses file made ready and written at close), then another writes.
            do {
                let writer = try openDataStore(path)
                for key in keys { _ = try Self.read(writer, key) }
                _ = writer.entryInfos
            }
            do {
                let writer = try openDataStore(path)
                for key in keys.prefix(20) { try write(writer, key) }
            }
            for key in keys.prefix(40) {
                guard ask(key, exact: true, "after a reading session and a writing one") else { return }
            }
            reader.closeInput()
            #expect(reader.wait(upTo: TestDeadline.long) && reader.status == 0, "\(reader.errors)")
            #expect(Self.strayFiles(path).isEmpty, "\(Self.strayFiles(path))")
        }
    }

    // MARK: Resources

    @Test("sessions that only read (a uses file made ready each), with the folder removed under some and compactions in others, keep no descriptor or mapping of the folder's files")
    func readSessionsKeepNoDescriptors() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<1500).map { "d\($0)" }
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            func fill() throws {
                let storage = try openDataStore(path)
                for key in keys { try storage.setObject(Self.value(key, 1, size: 64), forKey: key) }
            }
            try fill()
            BackgroundRelease.finish()
            guard let before = FilesChangedInPlaceTests.openFiles(under: directory.path) else { return }
            var madeReady = 0
            for round in 0..<24 {
                do {
                    let storage = try openDataStore(path)
                    for key in keys.prefix(600) { #expect(try Self.read(storage, key) == Self.value(key, 1, size: 64), "round \(round)") }
                    _ = storage.entryInfos
                    madeReady += storage.engine.sync { $0.usesFilesMadeReady }
                    switch round % 4 {
                    case 1: try FileManager.default.removeItem(atPath: path) // the close writes its uses into a folder gone
                    case 2: try storage.compactNow() // a change: the file made ready goes
                    default: break
                    }
                    // More reads after the change: another file made ready for the compaction's directory.
                    for key in keys.suffix(400) { _ = try Self.read(storage, key) }
                    _ = storage.entryInfos
                }
                if round % 4 == 1 { try fill() }
            }
            #expect(madeReady > 0, "no uses file was made ready")
            // What the stores let go of is released on threads of their own: waited for.
            PreparedUsesFile.finishFills()
            BackgroundRelease.finish()
            let after = FilesChangedInPlaceTests.openFiles(under: directory.path)
            #expect(after.map { $0 == before } ?? false, "before \(before), after \(String(describing: after))")
            #expect(Self.strayFiles(path).isEmpty, "\(Self.strayFiles(path))")
        }
    }

    // MARK: 2b. Older directory and uses put back together

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

    // MARK: Found: uses lost across a close after a batch

    @Test("reads, a batch, then reads: the order of least recent use the store had at close is the one it has after the reopen",
          arguments: [16, Int.max])
    func readsAroundABatchKeepTheirOrder(builderMinimum: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: 77)
        let keys = (0..<600).map { "k\($0)" }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: builderMinimum, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, 1, size: 100), forKey: key)
                }
            }
            let order: [String]
            do {
                let storage = try openDataStore(path, now: clock.function)
                for _ in 0..<300 {
                    clock.advance(by: 0.001)
                    _ = try Self.read(storage, keys[random.below(keys.count)])
                }
                var batch: [String: Data] = [:]
                for _ in 0..<40 {
                    let key = keys[random.below(keys.count)]
                    batch[key] = Self.value(key, 2, size: 50)
                }
                clock.advance(by: 1)
                try storage.setObjects(batch)
                for _ in 0..<300 {
                    clock.advance(by: 0.001)
                    _ = try Self.read(storage, keys[random.below(keys.count)])
                }
                order = storage.entryInfos.map(\.key)
            }
            let storage = try openDataStore(path, now: clock.function)
            let reopened = storage.entryInfos.map(\.key)
            #expect(reopened == order, "builder minimum \(builderMinimum): the order changed across the close; first difference at \(Array(zip(reopened, order)).firstIndex { $0.0 != $0.1 } ?? -1) of \(order.count)")
        }
    }

    @Test("reads on another thread while compactNow copies and writes the key directory: every read counts as use, in the order made")
    func readsDuringCompactionDirectoryKeepTheirUses() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: 3)
        let keys = (0..<20_000).map { "c\($0)" }
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, 1, size: 60), forKey: key)
                }
            }
            let storage = try openDataStore(path, now: clock.function)
            var expected = storage.entryInfos.map(\.key)
            let reads = keys.shuffled(using: &random)
            var read: [String] = []
            for round in 0..<4 {
                let done = AtomicWord()
                let finished = DispatchSemaphore(value: 0)
                DispatchQueue.global().async {
                    defer { finished.signal() }
                    try? storage.compactNow()
                    done.store(1)
                }
                // Reads on this thread, off the queue, until the compaction (and the directory it writes) is over.
                while done.value == 0, read.count < reads.count {
                    let key = reads[read.count]
                    clock.advance(by: 0.001)
                    #expect(try Self.read(storage, key) == Self.value(key, 1, size: 60))
                    read.append(key)
                }
                finished.wait()
                _ = round
            }
            let readSet = Set(read)
            expected = expected.filter { !readSet.contains($0) } + read
            let inSession = storage.entryInfos.map(\.key)
            let firstDifference = Array(zip(inSession, expected)).firstIndex { $0.0 != $0.1 }
            #expect(firstDifference == nil,
                    "\(read.count) reads during compactions: the order differs at \(firstDifference ?? -1) of \(expected.count); \(Set(inSession.suffix(read.count)).subtracting(readSet).count) keys not read stand among the last \(read.count)")
        }
    }

    /// How the compactions beside the reads run.
    enum Compacting: String, CaseIterable, CustomTestStringConvertible {
        case writingDirectory = "background compactions that write the key directory"
        case removingDirectory = "background compactions of a store too small for a key directory"
        case none = "no compaction"
        var testDescription: String { rawValue }
    }

    /// Found by `randomSessions`: a background compaction's finish writes the key directory on the queue
    /// and then takes the directory it encoded as the index's base (``DiskStore/writeDirectory(thenLoad:durable:)``);
    /// the uses that reads off the queue marked in the index between the encoding and that swap are lost,
    /// in the session and (the close writes the index's uses) after every reopen. A trim then evicts keys
    /// just read before keys not read for long.
    @Test("reads off the queue while a background compaction finishes: every read counts as use, in the order made, and a trim evicts the least recently used",
          arguments: [1, 2, 3, 4] as [UInt64], Compacting.allCases)
    func readsDuringBackgroundCompactionKeepTheirOrder(seed: UInt64, compacting: Compacting) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<600).map { "k\($0)" }
        var model = Model()
        try withEngineThresholds(in: path, compactionMinimum: compacting == .none ? 1 << 40 : 16 << 10,
                                 directoryMinimum: compacting == .writingDirectory ? 1 : 1 << 30, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 100)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            let storage = try openDataStore(path, now: clock.function)
            var version = 1
            var compactions = 0
            var differences = 0
            for round in 0..<6 {
                // Writes until a background compaction starts.
                var writes = 0
                while !storage.isCompacting, writes < (compacting == .none ? 300 : 2_000) {
                    let key = keys[random.below(keys.count)]
                    version += 1
                    clock.advance(by: 1)
                    let data = Self.value(key, version, size: 100 + random.below(50))
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                    writes += 1
                }
                if storage.isCompacting { compactions += 1 }
                // Reads off the queue while it copies and finishes.
                for _ in 0..<3_000 {
                    let key = keys[random.below(keys.count)]
                    clock.advance(by: 0.001)
                    #expect(try Self.read(storage, key) == model.values[key])
                    model.use(key)
                }
                storage.waitForCompaction()
                let order = storage.entryInfos.map(\.key)
                let first = Array(zip(order, model.order)).firstIndex { $0.0 != $0.1 }
                #expect(first == nil, "round \(round): the order differs from the reads' at \(first ?? -1) of \(order.count)")
                if first != nil {
                    differences += 1
                    // The most recently read keys the store holds as less recent than keys read before them.
                    let recent = Set(model.order.suffix(100))
                    let misplaced = order.prefix(order.count - 100).filter(recent.contains)
                    #expect(misplaced.isEmpty, "round \(round): \(misplaced.count) of the 100 keys read last are not among the store's 100 most recent: \(misplaced.prefix(5))")
                }
            }
            #expect((compactions > 0) == (compacting != .none), "compactions: \(compactions)")
            if differences == 0 {
                // A trim to a quarter keeps the most recently used.
                let target = model.totalSize / 4
                try storage.trim(toSize: target)
                model.trim(to: target)
                #expect(Set(storage.allKeys) == Set(model.values.keys), "the trim evicted other keys than the least recently used")
            }
        }
    }

    // MARK: Time through the kept directory and the uses file

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

    /// Found beside the test above: where the compaction writes no key directory (a store below its
    /// minimum), the order in the session is right but not after a reopen. The reads made while the copy
    /// ran noted access records against the inputs' positions; the finish drops those and notes one access
    /// record per entry used meanwhile, in the order the copy moved them (least recently used at its start),
    /// not the order of the reads, and after the accesses already noted against the copies' positions by
    /// reads made since the index was pointed at them (``Compaction/finish(_:victims:epoch:)``): the replay
    /// at the next open takes that order. (Putting the uses made meanwhile before the accesses noted
    /// since, all in the order of the reads, made this test pass in an experiment not committed.)
    @Test("reads off the queue during background compactions: after a reopen the order of least recent use is the reads' order",
          arguments: [5, 6] as [UInt64], Compacting.allCases)
    func readsDuringBackgroundCompactionSurviveReopen(seed: UInt64, compacting: Compacting) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<600).map { "k\($0)" }
        var model = Model()
        try withEngineThresholds(in: path, compactionMinimum: compacting == .none ? 1 << 40 : 16 << 10,
                                 directoryMinimum: compacting == .writingDirectory ? 1 : 1 << 30, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    let data = Self.value(key, 1, size: 100)
                    try storage.setObject(data, forKey: key)
                    model.set(key, data)
                }
            }
            var inSession: [String] = []
            do {
                let storage = try openDataStore(path, now: clock.function)
                var version = 1
                for _ in 0..<4 {
                    var writes = 0
                    while !storage.isCompacting, writes < (compacting == .none ? 300 : 2_000) {
                        let key = keys[random.below(keys.count)]
                        version += 1
                        clock.advance(by: 1)
                        let data = Self.value(key, version, size: 100 + random.below(50))
                        try storage.setObject(data, forKey: key)
                        model.set(key, data)
                        writes += 1
                    }
                    for _ in 0..<3_000 {
                        let key = keys[random.below(keys.count)]
                        clock.advance(by: 0.001)
                        #expect(try Self.read(storage, key) == model.values[key])
                        model.use(key)
                    }
                    storage.waitForCompaction()
                }
                inSession = storage.entryInfos.map(\.key)
            }
            let reopened = try openDataStore(path, now: clock.function).entryInfos.map(\.key)
            let first = Array(zip(reopened, model.order)).firstIndex { $0.0 != $0.1 }
            #expect(first == nil, "after the reopen the order differs from the reads' at \(first ?? -1) of \(reopened.count) (in the session: \(inSession == model.order ? "the same" : "different already"))")
        }
    }
}
