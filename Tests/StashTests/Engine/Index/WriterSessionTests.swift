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

/// Held-out attacks on the disk engine v4: reads off the queue beside a kept directory, a uses file made
/// ready, compactions and removeAll; sessions of a sole writer and of a writer among several on one
/// folder; reads off the queue while compactions run on the queue.
@Suite("Reads off the queue and writers of either kind beside every directory path", .serialized)
struct WriterSessionTests: HeldOutSessionScenario {
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
}
