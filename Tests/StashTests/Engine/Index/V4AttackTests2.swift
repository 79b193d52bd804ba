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

/// Held-out attacks on the disk engine v4, second set: reader processes beside a sole writer whose
/// background compactions write the key directory, whose sessions keep a directory as they go and whose
/// closes write key uses files; a full disk inside a session checked against a model; reads off the
/// queue while a kept directory, a uses file made ready, compactions and `removeAll` run.
@Suite("Sessions against a model, second set: reader processes, a full disk, reads off the queue (disk engine v4)", .serialized)
struct V4AttackTests2 {
    /// What a key held over time: each change's event number and the value's length (nil: none).
    /// Every write has a length of its own across all keys, so a length names the write.
    struct History {
        var event = 0
        var changes: [String: [(event: Int, length: Int?)]] = [:]
        var nextLength = 100
        /// The last event whose call returned (changes are noted before their call, so a read beside it may see them).
        var returned = 0

        /// Notes a write of `key`, returning the new value's length (`big`: 70,000 more, so that the value
        /// has a file of its own; lengths stay apart, the small ones far below 70,000).
        mutating func set(_ key: String, big: Bool = false) -> Int {
            nextLength += 1
            event += 1
            let length = big ? 70_000 + nextLength : nextLength
            changes[key, default: []].append((event, length))
            return length
        }

        /// Notes a removal of `key`.
        mutating func remove(_ key: String) {
            event += 1
            changes[key, default: []].append((event, nil))
        }

        /// Notes a `removeAll`: every key noted so far is gone.
        mutating func removeAll() {
            event += 1
            for key in changes.keys { changes[key]?.append((event, nil)) }
        }

        /// The length `key` held after event `event`.
        func length(_ key: String, at event: Int) -> Int? {
            changes[key]?.last { $0.event <= event }?.length ?? nil
        }

        /// Whether `length` (nil: missing) is an answer a read of `key` that began after event `event`
        /// may give: what the key held then, or anything it held later.
        func allows(_ length: Int?, for key: String, sentAfter event: Int) -> Bool {
            if length == self.length(key, at: event) { return true }
            return changes[key]?.contains { $0.event > event && $0.length == length } ?? false
        }
    }

    /// The value of length `length` written for `key`: it names its key.
    static func value(_ key: String, length: Int) -> Data {
        var data = Data("\(key)#\(length)|".utf8)
        data.append(Data(repeating: UInt8(truncatingIfNeeded: length), count: max(0, length - data.count)))
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

    /// A reader process (`StashTorture follow`) and the requests sent to it, each with the event it followed.
    final class Reader {
        let child: ChildProcess
        let watchdog: Watchdog
        /// Every read sent, in order (the child answers in order).
        var requests: [(key: String, event: Int)] = []
        let name: String

        /// Starts `StashTorture follow` on the store at `path`; `name` says which reader in messages.
        init(_ tool: URL, _ path: String, name: String) throws {
            child = try ChildProcess(tool, ["follow", path], input: .held)
            watchdog = Watchdog(child, seconds: TestDeadline.long)
            self.name = name
        }

        /// Sends a read of `key`, which begins after event `event` returned.
        func get(_ key: String, after event: Int) {
            requests.append((key, event))
            child.send("get \(key)\n")
        }

        /// Ends the reader and checks each answer against `history`; returns how many were wrong.
        func finish(_ history: History, _ comment: String) -> Int {
            child.closeInput()
            let ended = child.wait(upTo: TestDeadline.long)
            watchdog.cancel()
            #expect(ended && child.status == 0, "\(name) \(comment): \(child.ending): \(child.errors)")
            var lines = child.lines().map(String.init)
            #expect(lines.first == "ready", "\(name): \(lines.first ?? "nothing"): \(child.errors)")
            if lines.first == "ready" { lines.removeFirst() }
            #expect(lines.count == requests.count, "\(name): \(lines.count) answers to \(requests.count) reads: \(child.errors)")
            var wrong = 0
            for (line, request) in zip(lines, requests) {
                let words = line.split(separator: " ").map(String.init)
                let length: Int??
                switch (words.first, words.count) {
                case ("got", 3): length = .some(Int(words[2]))
                case ("missing", 2): length = .some(nil)
                default: length = nil
                }
                let good = words.count >= 2 && words[1] == request.key && length.map { history.allows($0, for: request.key, sentAfter: request.event) } == true
                if !good {
                    wrong += 1
                    if wrong <= 5 {
                        Issue.record("\(name) \(comment): read of \(request.key) sent after event \(request.event) answered \"\(line)\"; the key held \(history.length(request.key, at: request.event).map(String.init) ?? "nothing") then, later \(history.changes[request.key]?.filter { $0.event > request.event }.map { $0.length.map(String.init) ?? "removed" } ?? [])")
                    }
                }
            }
            #expect(wrong == 0, "\(name) \(comment): \(wrong) wrong answers of \(lines.count)")
            return wrong
        }
    }

    // MARK: 1. Reader processes beside a compacting sole writer

    /// Two reader processes (a third opens midway) read, pipelined, while a sole writer in this process
    /// writes (its background compactions write the key directory, its sessions keep one as they go),
    /// removes, reads (its closes write key uses files over files made ready), and closes and opens
    /// again. Each read is sent once the writes before it returned: it must see them, and answer a value
    /// of its key.
    @Test("reader processes beside a sole writer whose compactions write the key directory and whose closes write uses files: every answer is a value of its key, no older than the last write that returned before the read",
          arguments: [51, 52, 53] as [UInt64])
    func readerProcessesBesideCompactingWriter(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: seed)
        let keys = (0..<300).map { "r\($0)" }
        var history = History()
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let writer = try openDataStore(path)
                for key in keys { try writer.setObject(Self.value(key, length: history.set(key)), forKey: key) }
            }
            var readers = [try Reader(tool, path, name: "reader 1"), try Reader(tool, path, name: "reader 2")]
            for reader in readers { #expect(reader.child.waitForOutput(containing: "ready", upTo: TestDeadline.long), "\(reader.child.errors)") }
            func askAll(_ key: String) { for reader in readers { reader.get(key, after: history.event) } }
            var (compactions, keptDirectories, usesFilesMadeReady) = (0, 0, 0)
            var (compactedNow, cleared) = (false, false)
            for session in 0..<7 {
                // Readers that open after a session that only read (a key uses file beside the directory).
                if session == 2 || session == 5 { readers.append(try Reader(tool, path, name: "reader \(readers.count + 1) (opened at session \(session))")) }
                let writer = try openDataStore(path)
                let readingSession = session % 3 == 1
                for step in 0..<220 {
                    if readingSession {
                        // Reads alone: the close writes a key uses file (over one made ready).
                        for _ in 0..<6 {
                            let key = keys[random.below(keys.count)]
                            let got = try Self.read(writer, key)
                            #expect(got?.count == history.length(key, at: history.event), "session \(session) step \(step): the writer read \(key)")
                        }
                        askAll(keys[random.below(keys.count)])
                        continue
                    }
                    let choice = random.below(100)
                    // Most writes go to a hundred keys: dead bytes, and background compactions, come soon.
                    let key = random.below(3) == 0 ? keys[random.below(keys.count)] : keys[random.below(60)]
                    switch choice {
                    case 0..<75:
                        let length = history.set(key, big: random.below(25) == 0)
                        try writer.setObject(Self.value(key, length: length), forKey: key)
                    case 75..<90:
                        try writer.removeObject(forKey: key)
                        history.remove(key)
                    case 90..<97:
                        _ = try Self.read(writer, key)
                    default:
                        // Once, a compaction on the queue (the others run in the background, when due).
                        if session == 2, step > 150, !compactedNow {
                            try writer.compactNow()
                            compactedNow = true
                        } else if session == 5, step > 150, !cleared {
                            try writer.removeAll()
                            history.removeAll()
                            cleared = true
                        }
                    }
                    if writer.isCompacting { compactions += 1 }
                    if writer.engine.sync({ $0.directoryBuilder != nil }) { keptDirectories += 1 }
                    askAll(key)
                    askAll(keys[random.below(keys.count)])
                }
                if session == 4 { writer.waitForCompaction() }
                if readingSession { usesFilesMadeReady += writer.engine.sync { $0.usesFilesMadeReady } }
            }
            // The writer closed: every key once more.
            for key in keys { askAll(key) }
            #expect(compactions > 0, "no background compaction was seen")
            #expect(keptDirectories > 0, "no directory was kept as a session went")
            #expect(usesFilesMadeReady > 0, "no uses file was made ready")
            for reader in readers { _ = reader.finish(history, "seed \(seed)") }
        }
    }

    // MARK: 2. A full disk inside a session against a model

    /// A model of values alone (no size limit: eviction plays no part).
    typealias Values = [String: Data]

    /// Checks every key of `keys` and `allKeys` against `model`.
    static func expectAgrees(_ storage: DiskStorage<Data>, _ model: Values, _ keys: [String], _ comment: String) throws {
        #expect(Set(storage.allKeys) == Set(model.keys), "\(comment): allKeys: extra \(Set(storage.allKeys).subtracting(model.keys).sorted().prefix(5)), missing \(Set(model.keys).subtracting(storage.allKeys).sorted().prefix(5))")
        var wrong: [String] = []
        for key in keys {
            let got: Data?
            do { got = try Self.read(storage, key) } catch {
                Issue.record("\(comment): reading \(key) threw \(error)")
                continue
            }
            if got != model[key] { wrong.append("\(key): \(got.map { "\($0.count) bytes" } ?? "missing"), model \(model[key].map { "\($0.count) bytes" } ?? "missing")") }
        }
        #expect(wrong.isEmpty, "\(comment): \(wrong.count) values differ: \(wrong.prefix(5))")
    }

    /// Whether `error` is the file system's "no space" (or "quota"), which a write on a full disk may throw.
    static func isNoSpace(_ error: any Error) -> Bool {
        FileIO.isErrno(error, .ENOSPC) || FileIO.isErrno(error, .EDQUOT)
    }

    /// A store on a small file system filled to its last page by another file: writes (small, and large
    /// ones kept in files of their own), removals, compactions, the key directory kept as the session
    /// goes, closes that write a directory or a uses file, all on the full disk, against a model. A write
    /// that fails throws "no space" and changes nothing; once space is back the store agrees with the
    /// model, in the session and after a reopen.
    @Test("a full disk inside sessions against a model: failed writes throw and change nothing, compactions and directory writes on the full disk lose nothing, and the store agrees with the model once space is back and after a reopen",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: [61, 62] as [UInt64])
    func fullDiskInsideSessions(seed: UInt64) throws {
        try FullDiskTests.withMountedTmpfs(size: "6m") { mountPoint in
            let path = mountPoint + "/store"
            var random = SeededGenerator(seed: seed)
            let keys = (0..<500).map { "f\($0)" } + ["caf\u{E9}", "", "a/b"]
            var model: Values = [:]
            var version = 0
            func newValue(_ key: String) -> Data {
                version += 1
                let size = random.below(15) == 0 ? 70_000 + random.below(3_000) : 50 + random.below(1_500)
                var data = Data("\(key)#\(version)|".utf8)
                data.append(Data(repeating: UInt8(truncatingIfNeeded: version), count: size))
                return data
            }
            var failures = 0
            var successesWhileFull = 0
            /// One random change, on a disk that may be full: what it did must be all or nothing.
            func step(_ storage: DiskStorage<Data>, _ comment: String) throws {
                let key = keys[random.below(keys.count)]
                let choice = random.below(100)
                do {
                    switch choice {
                    case 0..<70:
                        let data = newValue(key)
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                    case 70..<88:
                        try storage.removeObject(forKey: key)
                        model[key] = nil
                    case 88..<96:
                        #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key)")
                    case 96..<99:
                        try storage.compactNow()
                    default:
                        if random.below(4) == 0 {
                            try storage.removeAll()
                            model = [:]
                        }
                    }
                    successesWhileFull += 1
                } catch {
                    failures += 1
                    #expect(Self.isNoSpace(error), "\(comment): step \(choice) on \(key) threw \(error)")
                    // Nothing changed: the key reads as before.
                    let got = try? Self.read(storage, key)
                    #expect(got == model[key], "\(comment): \(key) after a failed step \(choice): \(got.map { "\($0.count) bytes" } ?? "missing"), model \(model[key].map { "\($0.count) bytes" } ?? "missing")")
                }
            }
            try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                     directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
                do {
                    let storage = try openDataStore(path)
                    for key in keys.prefix(300) {
                        let data = newValue(key)
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                    }
                }
                for session in 0..<5 {
                    let comment = "seed \(seed) session \(session)"
                    do {
                        let storage = try openDataStore(path)
                        try Self.expectAgrees(storage, model, keys, "\(comment) at open")
                        // A few writes with room (the directory starts being kept), then the disk fills.
                        if session == 3 {
                            // Reads alone: the close writes a key uses file (over one made ready) on the full disk.
                            try FullDiskTests.fill(mountPoint, leaving: 0)
                            for key in keys { #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key) on the full disk") }
                        } else {
                            for _ in 0..<30 { try step(storage, "\(comment) with room") }
                            try FullDiskTests.fill(mountPoint, leaving: session.isMultiple(of: 2) ? 0 : 40_000)
                            for number in 0..<150 { try step(storage, "\(comment) full, step \(number)") }
                        }
                        try Self.expectAgrees(storage, model, keys, "\(comment) on the full disk")
                        if session.isMultiple(of: 2) {
                            // Space comes back in the session.
                            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                            try Self.expectAgrees(storage, model, keys, "\(comment) once space is back")
                            for number in 0..<60 { try step(storage, "\(comment) with room again, step \(number)") }
                            try Self.expectAgrees(storage, model, keys, "\(comment) after writes with room again")
                            try FullDiskTests.fill(mountPoint, leaving: 0)
                        }
                        // The close writes its directory (or uses file) on the full disk.
                    }
                    do {
                        // Opened on the full disk.
                        let storage = try openDataStore(path)
                        try Self.expectAgrees(storage, model, keys, "\(comment) reopened on the full disk")
                    }
                    try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                    let storage = try openDataStore(path)
                    try Self.expectAgrees(storage, model, keys, "\(comment) reopened with room")
                    #expect(Self.strayFiles(path).isEmpty, "\(comment): \(Self.strayFiles(path))")
                }
                #expect(failures > 0, "no step failed on the full disk")
            }
        }
    }

    /// Names in the store folder that are not the store's files.
    static func strayFiles(_ path: String) -> [String] { ModelSessionTests.strayFiles(path) }

    // MARK: 3. Reads off the queue beside a kept directory, a uses file made ready, compactions and removeAll

    /// Readers on two threads, off the queue, while this thread writes (a directory kept as the session
    /// goes, background compactions that write the key directory), compacts, removes everything, or only
    /// reads (a uses file made ready), session after session, each closed by letting go of the store: each
    /// answer is a value of its key, no older than the last write that returned before the read began.
    @Test("reads off the queue on two threads beside writes kept in a directory as they go, compactions, removeAll and sessions that only read: every answer is a value of its key and not older than the writes that returned before it",
          arguments: [71] as [UInt64])
    func readsOffTheQueueBesideEveryDirectoryPath(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<700).map { "q\($0)" }
        let history = Locked(History())
        let wrong = Locked([String]())
        var random = SeededGenerator(seed: seed)
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path)
                for key in keys { try storage.setObject(Self.value(key, length: history.withLock { $0.set(key) }), forKey: key) }
                history.withLock { $0.returned = $0.event }
            }
            for session in 0..<4 {
                let storage = try openDataStore(path)
                let done = AtomicWord()
                let group = DispatchGroup()
                for index in 0..<2 {
                    group.enter()
                    let thread = Thread {
                        defer { group.leave() }
                        var random = SeededGenerator(seed: seed &* 1000 &+ UInt64(session * 10 + index))
                        while done.value == 0 {
                            let key = keys[random.below(keys.count)]
                            let event = history.withLock { $0.returned }
                            let got: Data?
                            do { got = try Self.read(storage, key) } catch {
                                wrong.withLock { $0.append("session \(session): \(key) threw \(error)") }
                                continue
                            }
                            let ofItsKey = got.map { $0.starts(with: Data("\(key)#".utf8)) } ?? true
                            let allowed = history.withLock { $0.allows(got?.count, for: key, sentAfter: event) }
                            if !ofItsKey || !allowed {
                                let held = history.withLock { $0.length(key, at: event) }
                                wrong.withLock { $0.append("session \(session): \(key) read after event \(event) gave \(got.map { "\($0.count) bytes, \(String(decoding: $0.prefix(12), as: UTF8.self))" } ?? "nothing"), it held \(held.map(String.init) ?? "nothing")") }
                            }
                        }
                    }
                    thread.start()
                }
                switch session % 2 {
                case 0:
                    for number in 0..<250 {
                        let key = keys[random.below(keys.count)]
                        if session == 2, number == 150 {
                            history.withLock { $0.removeAll() }
                            try storage.removeAll()
                        }
                        switch random.below(100) {
                        case 0..<80:
                            let big = random.below(40) == 0
                            let length = history.withLock { $0.set(key, big: big) }
                            try storage.setObject(Self.value(key, length: length), forKey: key)
                        case 80..<95:
                            history.withLock { $0.remove(key) }
                            try storage.removeObject(forKey: key)
                        default:
                            if random.below(3) == 0 { try storage.compactNow() } else { _ = try Self.read(storage, key) }
                        }
                        history.withLock { $0.returned = $0.event }
                    }
                default:
                    // Reads alone on this thread too: the close writes a uses file over one made ready.
                    for _ in 0..<3 { for key in keys { _ = try Self.read(storage, key) } }
                }
                done.store(1)
                #expect(group.wait(timeout: TestDeadline.fromNow) == .success)
                storage.waitForCompaction()
                let events = history.withLock { $0.event }
                var differ: [String] = []
                for key in keys where try Self.read(storage, key)?.count != history.withLock({ $0.length(key, at: events) }) { differ.append(key) }
                #expect(differ.isEmpty, "session \(session): \(differ.count) keys differ at the session's end: \(differ.prefix(5))")
            }
            let reopened = try openDataStore(path)
            let events = history.withLock { $0.event }
            var differ: [String] = []
            for key in keys where try Self.read(reopened, key)?.count != history.withLock({ $0.length(key, at: events) }) { differ.append(key) }
            #expect(differ.isEmpty, "after a reopen: \(differ.count) keys differ: \(differ.prefix(5))")
            #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        }
        let found = wrong.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) wrong answers: \(found.prefix(5))")
    }

    // MARK: 4. Observers of a reader beside a writer process that writes key directories

    /// A read-only `Storage` in this process, with an observer, beside writer processes (one per session,
    /// `StashTorture step --small-thresholds`) whose overwrites make them compact in the background and
    /// write the key directory, whose sessions keep one as they go and seal it at close: at every call of
    /// this process, the observer has heard every change the writers made, in order (Contract items 11
    /// and 12), and a read returns the last value written.
    @Test("observers of a read-only storage hear every change of writer processes whose compactions write the key directory and whose closes seal a kept one, in order, at this process's next call",
          arguments: [81, 82] as [UInt64])
    func observersBesideDirectoryWritingWriters(seed: UInt64) throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig()
        config.readOnly = true
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        let before = changes.received.count
        var random = SeededGenerator(seed: seed)
        let keys = (0..<40).map { "k\($0)" }
        var expected: [StorageChange] = []
        var present: [String: UInt64] = [:] // key → the sequence of its value (numbered per writer process)
        var agreed = true
        /// A call of this process: the observer must have heard every change by its end.
        func check(_ comment: String) throws {
            _ = try storage.existsObject(forKey: "unrelated")
            storage.waitForObservers()
            let heard = Array(changes.received.dropFirst(before))
            guard heard != expected else { return }
            agreed = false
            let first = Array(zip(heard, expected)).firstIndex { $0.0 != $0.1 } ?? min(heard.count, expected.count)
            Issue.record("\(comment): the observer heard \(heard.count) changes, \(expected.count) were made; first difference at \(first): heard \(heard.dropFirst(first).prefix(4)), made \(expected.dropFirst(first).prefix(4))")
        }
        for session in 0..<4 {
            let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
            let watchdog = Watchdog(writer, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(writer.readLine() == "ready", "\(writer.errors)")
            var sequence: UInt64 = 0
            for step in 0..<150 where agreed {
                let comment = "seed \(seed) session \(session) step \(step)"
                let key = keys[random.below(keys.count)]
                switch random.below(100) {
                case 0..<80:
                    sequence += 1
                    let size = 1_000 + random.below(4_000)
                    let answer = writer.ask("set \(key) \(size)")
                    #expect(answer == "wrote \(key) \(sequence)", "\(comment): \(writer.errors)")
                    expected.append(.add(key: key))
                    present[key] = sequence
                case 80..<98:
                    #expect(writer.ask("remove \(key)") == "removed \(key)", "\(comment): \(writer.errors)")
                    if present.removeValue(forKey: key) != nil { expected.append(.remove(key: key)) }
                default:
                    guard session == 2 else { break }
                    #expect(writer.ask("clear") == "cleared", "\(comment): \(writer.errors)")
                    expected.append(.removeAll)
                    present = [:]
                }
                if random.below(3) == 0 {
                    try check(comment)
                    let read = keys[random.below(keys.count)]
                    let got = try? storage.object(forKey: read)
                    #expect(got.flatMap { WrittenValue(parsing: $0, key: read)?.sequence } == present[read], "\(comment): read of \(read)")
                }
            }
            writer.closeInput()
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
            // The close sealed its directory: no change to hear, every value as written.
            try check("seed \(seed) after session \(session)'s close")
            for key in keys {
                let got = try? storage.object(forKey: key)
                #expect(got.flatMap { WrittenValue(parsing: $0, key: key)?.sequence } == present[key], "after session \(session): read of \(key)")
            }
            guard agreed else { break }
        }
    }

    // MARK: 5. Sessions of a sole writer and of a writer among several on one folder

    /// Sessions on one folder that alternate between a sole writer (a directory kept as it goes, uses
    /// files made ready and written at close) and a writer among several (compaction in steps, the
    /// directory read whole), each writing or only reading: every open reports nothing, and the store
    /// agrees with a model of its values. (The order of use is left out: a step's moves are a known defect.)
    @Test("sessions alternating a sole writer (kept directory, uses files) and a writer among several (compaction in steps): every open reports no damage and the values and keys match a model",
          arguments: [91, 92] as [UInt64])
    func soleAndSharedWriterSessions(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let url = URL(fileURLWithPath: path)
        var random = SeededGenerator(seed: seed)
        let keys = (0..<250).map { "w\($0)" } + ["caf\u{E9}", "cafe\u{301}x", ""]
        var model: Values = [:]
        var version = 0
        func open(shared: Bool) throws -> DiskStorage<Data> {
            try DiskStorage(config: DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), allowsWritersInOtherProcesses: shared),
                            transformer: TransformerFactory.forData())
        }
        try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10, compactionStep: 8 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try open(shared: false)
                for key in keys {
                    version += 1
                    let data = Self.value(key, length: 100 + version)
                    try storage.setObject(data, forKey: key)
                    model[key] = data
                }
            }
            var history: [String] = []
            for session in 0..<8 {
                let shared = random.below(2) == 0
                let readsOnly = random.below(3) == 0
                history.append("\(shared ? "shared" : "sole")\(readsOnly ? " reads" : " writes")")
                let comment = "seed \(seed) session \(session) (\(history.joined(separator: ", ")))"
                let storage = try open(shared: shared)
                #expect(storage.recoveryIssues.isEmpty, "\(comment): at open: \(storage.recoveryIssues)")
                try Self.expectAgrees(storage, model, keys.shuffled(using: &random), "\(comment) at open")
                for _ in 0..<(readsOnly ? 0 : 120) {
                    let key = keys[random.below(keys.count)]
                    switch random.below(100) {
                    case 0..<70:
                        version += 1
                        let data = Self.value(key, length: 100 + version + (random.below(30) == 0 ? 70_000 : 0))
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                    case 70..<85:
                        try storage.removeObject(forKey: key)
                        model[key] = nil
                    case 85..<99:
                        #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key)")
                    default:
                        try storage.compactNow()
                    }
                }
                if readsOnly { for key in keys.shuffled(using: &random) { #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key)") } }
                try Self.expectAgrees(storage, model, keys, "\(comment) at its end")
            }
            let storage = try open(shared: false)
            #expect(storage.recoveryIssues.isEmpty, "last open: \(storage.recoveryIssues)")
            try Self.expectAgrees(storage, model, keys, "seed \(seed) last open")
            #expect(Self.strayFiles(path).isEmpty, "\(Self.strayFiles(path))")
        }
    }

    // MARK: 6. A full disk under a size limit

    /// A store with `maxSize`, at its limit, on a full disk: a write that needs others evicted and fails
    /// for want of space throws and evicts nothing (Contract item 5's eviction happens for a write that
    /// is stored); once space is back the store agrees with the model, in the session and after a reopen.
    @Test("a write that would evict others under maxSize but fails on a full disk throws and evicts nothing",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: [2_000, 30_000, 90_000])
    func fullDiskUnderASizeLimit(valueSize: Int) throws {
        try FullDiskTests.withMountedTmpfs(size: "4m") { mountPoint in
            let path = mountPoint + "/store"
            let limit = valueSize * 12
            var model: Values = [:]
            var order: [String] = []
            try withEngineThresholds(in: path, directoryMinimum: 1, directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
                let storage = try openDataStore(path, maxSize: limit)
                for number in 0..<12 {
                    let key = "m\(number)"
                    let data = Self.value(key, length: valueSize - number)
                    try storage.setObject(data, forKey: key)
                    model[key] = data
                    order.append(key)
                }
                try #require(Set(storage.allKeys) == Set(model.keys), "the store was not filled to its limit: \(storage.allKeys.sorted())")
                try FullDiskTests.fill(mountPoint, leaving: 0)
                var failures = 0
                for number in 0..<40 {
                    let key = "n\(number)"
                    let data = Self.value(key, length: valueSize + 1 + number)
                    do {
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                        order.append(key)
                        // Stored: the least recently used went, as many as the limit asks.
                        var total = model.values.reduce(0) { $0 + $1.count }
                        while total > limit, let first = order.first {
                            total -= model[first]?.count ?? 0
                            model[first] = nil
                            order.removeFirst()
                        }
                    } catch {
                        failures += 1
                        #expect(Self.isNoSpace(error), "write of \(key): \(error)")
                    }
                    #expect(Set(storage.allKeys) == Set(model.keys), "after the write of \(key): extra \(Set(storage.allKeys).subtracting(model.keys).sorted()), missing \(Set(model.keys).subtracting(storage.allKeys).sorted())")
                }
                #expect(failures > 0, "no write failed on the full disk")
                try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                try Self.expectAgrees(storage, model, Array(model.keys) + (0..<12).map { "m\($0)" }, "once space is back")
            }
            try withEngineThresholds(in: path, directoryMinimum: 1) {
                let reopened = try openDataStore(path, maxSize: limit)
                try Self.expectAgrees(reopened, model, Array(model.keys) + (0..<12).map { "m\($0)" } + (0..<40).map { "n\($0)" }, "after a reopen")
            }
        }
    }

    // MARK: 7. Reads off the queue while compactions run on the queue

    /// One thread reads every key once, in a shuffled order, off the queue, while this thread compacts
    /// on the queue (`compactNow`, writing the key directory or not) again and again: every read counts
    /// as use in the order made (Contract item 5), in the session and after a reopen.
    @Test("reads off the queue on one thread while compactions run on the queue: the order of least recent use is the reads' order, in the session and after a reopen",
          arguments: [true, false])
    func readsDuringCompactionsOnTheQueue(writingDirectory: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let keys = (0..<1_500).map { "c\($0)" }
        try withEngineThresholds(in: path, compactionMinimum: 1 << 40, directoryMinimum: writingDirectory ? 1 : 1 << 30, segmentLimit: 64 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, length: 60), forKey: key)
                }
            }
            var random = SeededGenerator(seed: writingDirectory ? 5 : 6)
            let readOrder = keys.shuffled(using: &random)
            let storage = try openDataStore(path, now: clock.function)
            let done = AtomicWord()
            let wrong = Locked(0)
            let thread = Thread {
                for key in readOrder {
                    if (try? Self.read(storage, key))?.starts(with: Data("\(key)#".utf8)) != true { wrong.withLock { $0 += 1 } }
                }
                done.store(1)
            }
            thread.start()
            var compactions = 0
            while done.value == 0 || compactions < 2 {
                try storage.compactNow()
                compactions += 1
            }
            #expect(wrong.withLock { $0 } == 0)
            let inSession = storage.entryInfos.map(\.key)
            let first = Array(zip(inSession, readOrder)).firstIndex { $0.0 != $0.1 }
            #expect(first == nil, "in the session (\(compactions) compactions): the order differs from the reads' at \(first ?? -1) of \(inSession.count)")
            withExtendedLifetime(storage) {}
        }
        try withEngineThresholds(in: path, directoryMinimum: writingDirectory ? 1 : 1 << 30) {
            var random = SeededGenerator(seed: writingDirectory ? 5 : 6)
            let readOrder = keys.shuffled(using: &random)
            let reopened = try openDataStore(path).entryInfos.map(\.key)
            let first = Array(zip(reopened, readOrder)).firstIndex { $0.0 != $0.1 }
            #expect(first == nil, "after a reopen: the order differs from the reads' at \(first ?? -1) of \(reopened.count)")
        }
    }

    // MARK: 8. Memory hits and disk reads in one order

    /// A `Storage` with a small memory layer reads on one thread, some keys from memory, some from disk
    /// off the queue, in sessions that only read (a uses file made ready and written at close) or also
    /// write (a directory kept as they go): after each reopen, the disk's order of least recent use is
    /// the order of the reads and writes (Contract item 5: memory hits count as use, and the order
    /// survives a restart).
    @Test("memory hits and disk reads of one thread, in sessions that only read or also write: after each reopen the order of least recent use is the order of use",
          arguments: [0, 1] as [Int])
    func memoryHitsAndDiskReadsKeepOneOrder(variant: Int) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        let keys = (0..<800).map { "h\($0)" }
        var random = SeededGenerator(seed: 40 + UInt64(variant))
        var order: [String] = []
        func use(_ key: String) {
            order.removeAll { $0 == key }
            order.append(key)
        }
        try withEngineThresholds(in: path, directoryMinimum: 1, segmentLimit: 64 << 10, directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let storage = try openDataStore(path, now: clock.function)
                for key in keys {
                    clock.advance(by: 1)
                    try storage.setObject(Self.value(key, length: 80), forKey: key)
                    use(key)
                }
            }
            var version = 1
            for session in 0..<6 {
                do {
                    let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 120),
                                                    transformer: TransformerFactory.forData(), now: clock.function)
                    let writes = session % 2 == variant
                    for _ in 0..<900 {
                        clock.advance(by: 0.01)
                        // A hot set read often (memory hits), and the rest (disk reads).
                        let key = random.below(2) == 0 ? keys[random.below(60)] : keys[random.below(keys.count)]
                        if writes, random.below(4) == 0 {
                            version += 1
                            try storage.setObject(Self.value(key, length: 80 + version), forKey: key)
                        } else {
                            #expect(try storage.object(forKey: key).starts(with: Data("\(key)#".utf8)))
                        }
                        use(key)
                    }
                }
                let reopened = try openDataStore(path, now: clock.function).entryInfos.map(\.key)
                let first = Array(zip(reopened, order)).firstIndex { $0.0 != $0.1 }
                withKnownIssue(Self.memoryHitsLate, isIntermittent: true) {
                #expect(first == nil, "after session \(session) (\(session % 2 == variant ? "reads and writes" : "reads alone")): the order differs from the order of use at \(first ?? -1) of \(reopened.count): store \(first.map { Array(reopened[$0..<min($0 + 4, reopened.count)]) } ?? []), uses \(first.map { Array(order[$0..<min($0 + 4, order.count)]) } ?? [])")
                }
                if first != nil { break }
            }
        }
    }

    /// The smallest case of the test above: a memory hit of `a` made before a disk read of `c` counts, on
    /// disk, as if made after it. The read of `c` marks the index at once (off the queue); the hit waits in
    /// the memory layer until the disk takes the hits (before a trim, a compaction, at close) and then gets
    /// the next recency. A trim to one value then keeps `a`, used before `c`, and evicts `c`.
    @Test("a memory hit made before a disk read counts as use before it: a trim keeps the key read last", arguments: [false, true])
    func memoryHitBeforeADiskRead(afterReopen: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        do {
            let disk = try openDataStore(path, now: clock.function)
            for key in ["a", "b", "c"] {
                clock.advance(by: 1)
                try disk.setObject(Data(repeating: 1, count: 100), forKey: key)
            }
        }
        do {
            let storage = try Storage<Data>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 10),
                                            transformer: TransformerFactory.forData(), now: clock.function)
            clock.advance(by: 1)
            _ = try storage.object(forKey: "a") // from disk; now in memory
            clock.advance(by: 1)
            _ = try storage.object(forKey: "b") // from disk
            clock.advance(by: 1)
            _ = try storage.object(forKey: "a") // a memory hit
            clock.advance(by: 1)
            _ = try storage.object(forKey: "c") // from disk: the most recent use
            if !afterReopen {
                let disk = try openDataStore(path, now: clock.function) // the same engine
                withKnownIssue(Self.memoryHitsLate) {
                    #expect(disk.entryInfos.map(\.key) == ["b", "a", "c"], "the order of use in the session")
                    try disk.trim(toSize: 100)
                    #expect(disk.allKeys == ["c"], "a trim to one value keeps the key used last")
                }
                return
            }
        }
        let reopened = try openDataStore(path, now: clock.function)
        withKnownIssue(Self.memoryHitsLate) {
            #expect(reopened.entryInfos.map(\.key) == ["b", "a", "c"], "the order of use after a reopen")
            try reopened.trim(toSize: 100)
            #expect(reopened.allKeys == ["c"], "a trim to one value keeps the key used last")
        }
    }

    /// A known defect, not fixed yet: the disk takes a memory layer's hits late (at a write, a trim, a
    /// listing, a close) and gives them the next recency, after disk reads made later. A fix would take
    /// the waiting hits with each disk read, in the hold of the index's lock in which the read marks its
    /// entry (off the queue too, noting their access records in the read's stripe).
    static let memoryHitsLate: Comment = "known defect: memory hits count on disk after the disk reads made after them"

    /// Without a memory layer: reads off the queue leave their access records waiting in the stripes,
    /// and a read on the queue made after them (inside a transaction) notes its own at once; when they
    /// are written, the stripes' go after the queue's (``SegmentLog/takeOffQueueAccesses()`` appends
    /// them to the pending ones), so the replay at the next open counts the earlier reads as the later.
    @Test("reads off the queue, then a read on the queue (a transaction's): after a reopen the order of least recent use is the reads' order")
    func offQueueReadsThenAReadOnTheQueue() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let clock = TestClock()
        do {
            let disk = try openDataStore(path, now: clock.function)
            for key in ["a", "b", "c"] {
                clock.advance(by: 1)
                try disk.setObject(Data(repeating: 1, count: 100), forKey: key)
            }
        }
        do {
            let disk = try openDataStore(path, now: clock.function)
            clock.advance(by: 1)
            _ = try disk.object(forKey: "a") // off the queue
            clock.advance(by: 1)
            _ = try disk.object(forKey: "b") // off the queue
            clock.advance(by: 1)
            _ = try disk.transaction { try $0.object(forKey: "a") } // on the queue: the most recent use
            #expect(disk.entryInfos.map(\.key) == ["c", "b", "a"], "the order of use in the session")
        }
        let reopened = try openDataStore(path, now: clock.function)
        #expect(reopened.entryInfos.map(\.key) == ["c", "b", "a"], "the order of use after a reopen")
        try reopened.trim(toSize: 100)
        #expect(reopened.allKeys == ["a"], "a trim to one value keeps the key used last")
    }

    /// Reads off the queue made one after the other on different threads (each thread starts once the
    /// one before ended): their access records wait in the stripe of their thread, and are written stripe
    /// after stripe, not in the order made; a replay at the next open then takes the stripes' order.
    @Test("reads off the queue made one after the other, each on a thread of its own: after a reopen the order of least recent use is the reads' order")
    func offQueueReadsOnThreadsInTurn() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<16).map { "t\($0)" }
        do {
            let disk = try openDataStore(path)
            for key in keys { try disk.setObject(Data(repeating: 1, count: 100), forKey: key) }
        }
        let readOrder = Array(keys.reversed())
        do {
            let disk = try openDataStore(path)
            for key in readOrder {
                // A thread of its own for each read, started once the read before returned.
                let ended = DispatchSemaphore(value: 0)
                let reader = Thread {
                    _ = try? disk.object(forKey: key)
                    ended.signal()
                }
                reader.start()
                #expect(ended.wait(timeout: TestDeadline.fromNow) == .success)
            }
            #expect(disk.entryInfos.map(\.key) == readOrder, "in the session")
        }
        let reopened = try openDataStore(path).entryInfos.map(\.key)
        #expect(reopened == readOrder, "after a reopen")
    }
}

