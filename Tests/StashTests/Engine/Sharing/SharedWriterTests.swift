import Foundation
import Testing
import Stash

// Contract item 11, writers in several processes (`DiskConfig.allowsWritersInOtherProcesses`): real
// processes (`StashTorture share`, see Tests/StashTorture/SharedWriters.swift) write one store at
// once. Each logs every operation once it returned; the logs and the store's final state must fit one
// serialisation of all the histories, no value read is one that was not written for its key, and a
// write that returned is never lost, whichever process is killed and when. Bounded in count and time.

@Suite("Writers in several processes", .serialized)
struct SharedWriterTests {
    @Test("two writer processes × 10,000 random operations on shared keys: every read and the final state fit one serialisation of both histories")
    func twoWritersSerialise() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let writers = try (1...2).map { tag in
            try ChildProcess(try executable("StashTorture"),
                             ["share", store, "--seed", "\(40 + tag)", "--tag", "\(tag)", "--private", tag == 1 ? "a" : "b", "--ops", "10000"])
        }
        let watchdogs = writers.map { Watchdog($0, seconds: TestDeadline.long) }
        defer { watchdogs.forEach { $0.cancel() } }
        let histories = writers.map { writer in writer.lines().compactMap(LoggedOperation.init) }
        for (writer, history) in zip(writers, histories) {
            #expect(writer.status == 0 && history.count == 10_000, "a writer stopped after \(history.count) operations: \(writer.errors)")
        }
        let final = try finalState(of: folder)
        #expect(final.wrong.isEmpty, "values that are no complete value of their key: \(final.wrong)")
        let check = Serialisation(histories: histories, final: final.sequences)
        #expect(check.problems.isEmpty, "\(check.problems.prefix(5))")
    }

    @Test("SIGKILL of either of two writer processes at random moments, 100 times: no wrong value, no returned write lost, the other goes on")
    func killsOfEitherWriter() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let torture = try executable("StashTorture")
        var random = SeededGenerator(seed: 2_411)
        var tag: UInt64 = 0
        var running: [ChildProcess] = []
        var histories: [[LoggedOperation]] = [[], []] // per role: a, b
        func start(_ role: Int) throws -> ChildProcess {
            tag += 1
            return try ChildProcess(torture, ["share", store, "--seed", "\(tag)", "--tag", "\(tag)", "--private", role == 0 ? "a" : "b"],
                                    input: .held)
        }
        running = [try start(0), try start(1)]
        let started = Date()
        for round in 0..<100 {
            let role = random.below(2)
            let victim = running[role]
            // Killed once it has done some work, at a random moment after that (inside an operation,
            // holding the lock, or between two).
            _ = victim.waitForOutput(containing: "\n", upTo: TestDeadline.long)
            usleep(UInt32(random.below(30_000)))
            #expect(victim.isRunning, "round \(round): writer \(role) ended by itself: \(victim.errors)")
            victim.kill()
            histories[role] += victim.lines().compactMap(LoggedOperation.init)
            running[role] = try start(role)
            if Date().timeIntervalSince(started) > TestDeadline.long { // a bound on a stuck round, not a speed test
                Issue.record("100 kills took more than \(Int(TestDeadline.long)) s (round \(round))")
                break
            }
        }
        for (role, survivor) in running.enumerated() {
            _ = survivor.waitForOutput(containing: "\n", upTo: TestDeadline.long)
            survivor.closeInput()
            #expect(survivor.wait(upTo: TestDeadline.long) && survivor.status == 0, "writer \(role) did not go on: \(survivor.errors)")
            histories[role] += survivor.lines().compactMap(LoggedOperation.init)
        }
        let final = try finalState(of: folder)
        #expect(final.wrong.isEmpty, "values that are no complete value of their key: \(final.wrong)")
        // Each role's own keys are written by one process at a time: the last write that returned is
        // there, or a later one that was under way when its process was killed.
        var lost: [String] = []
        for history in histories {
            var acknowledged: [String: UInt64] = [:]
            for operation in history where operation.kind == .set && !operation.key.hasPrefix("k") {
                acknowledged[operation.key] = max(acknowledged[operation.key] ?? 0, operation.sequence)
            }
            for (key, sequence) in acknowledged where (final.sequences[key] ?? 0) < sequence {
                lost.append("\(key) #\(sequence) (found \(final.sequences[key].map(String.init) ?? "nothing"))")
            }
        }
        #expect(lost.isEmpty, "returned writes lost: \(lost)")
        #expect(histories.allSatisfy { $0.count > 100 }, "too little work between the kills: \(histories.map(\.count))")
    }

    @Test("a writer process sees another writer process's write once it returned, its memory layer included")
    func writerSeesOtherWriter() throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig(sharedWriters: true)
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 100), transformer: TransformerFactory.forData())
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "the other writer did not open beside this one: \(other.errors)")
        for step in 1...200 {
            let key = "k\(step % 7)"
            if step % 3 == 0 {
                // This process writes; the other's next write of the key must not be hidden by memory.
                try storage.setObject(Data("mine \(step)".utf8), forKey: key)
                #expect(try storage.object(forKey: key) == Data("mine \(step)".utf8))
            }
            let size = step % 50 == 0 ? 300_000 : step
            let answer = other.ask("set \(key) \(size)")
            let sequence = try #require(answer.split(separator: " ").last.flatMap { UInt64($0) }, "the other writer answered \(answer)")
            let read = try storage.object(forKey: key)
            #expect(WrittenValue(parsing: read, key: key)?.sequence == sequence, "step \(step): a stale \(key)")
        }
        #expect(other.ask("clear") == "cleared")
        #expect(storage.allKeys.isEmpty)
        #expect(throws: StorageError.notFound) { try storage.object(forKey: "k1") }
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }

    @Test("a process that opens without the setting keeps the store to itself: the shared writers' calls throw inUse meanwhile, and go on after")
    func soleWriterExcludesSharedWriters() throws {
        let folder = TemporaryDirectory()
        let config = folder.diskConfig(sharedWriters: true)
        let shared = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        try shared.setObject(Data("before".utf8), forKey: "key")
        let sole = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(sole, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(sole.readLine() == "ready", "\(sole.errors)")
        #expect(throws: StorageError.inUse(directory: shared.path)) { try shared.setObject(Data("during".utf8), forKey: "key") }
        #expect(sole.ask("set key 10") == "wrote key 1")
        sole.closeInput()
        #expect(sole.wait(upTo: TestDeadline.long) && sole.status == 0)
        #expect(WrittenValue(parsing: try shared.object(forKey: "key"), key: "key")?.sequence == 1)
        try shared.setObject(Data("after".utf8), forKey: "key")
        #expect(try shared.object(forKey: "key") == Data("after".utf8))
        // Between the shared writer's calls it holds no lock: a sole writer opens.
        let run = try ChildProcess.run(try executable("StashTorture"), ["step", folder.storePath()], input: Data("set key 5\n".utf8))
        #expect(run.status == 0, "\(run.stderr)")
    }

    @Test("stash get, ls, stats and check, and a read-only storage, on a store two writer processes are writing: every value was written, no damage")
    func readersBesideSharedWriters() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let torture = try executable("StashTorture")
        let writers = try (1...2).map { tag in
            try ChildProcess(torture, ["share", store, "--seed", "\(tag)", "--tag", "\(tag)", "--private", tag == 1 ? "a" : "b"], input: .held)
        }
        let watchdogs = writers.map { Watchdog($0, seconds: TestDeadline.long) }
        defer { watchdogs.forEach { $0.cancel() } }
        for writer in writers { try #require(writer.waitForOutput(), "a writer did not start: \(writer.errors)") }
        var config = folder.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let stash = try executable("stash")
        var read: [(key: String, sequence: UInt64)] = []
        for round in 0..<8 {
            let key = "k\(round % 16)"
            let get = try ChildProcess.run(stash, ["--dir", store, "get", key])
            #expect(get.status == 0 || get.status == 3, "get \(key): \(get.status) \(get.stderr)")
            if get.status == 0 {
                let value = WrittenValue(parsing: get.stdout, key: key)
                #expect(value != nil, "get \(key) printed \(get.stdout.count) bytes that are no value written for it")
                if let value { read.append((key, value.sequence)) }
            }
            for command in [["ls"], ["stats"], ["check"]] {
                let run = try ChildProcess.run(stash, ["--dir", store] + command)
                #expect(run.status == 0, "\(command): \(run.status) \(String(decoding: run.stdout, as: UTF8.self)) \(run.stderr)")
                if command == ["check"] { #expect(String(decoding: run.stdout, as: UTF8.self).contains("no damage found")) }
            }
            for _ in 0..<200 {
                let key = ["k", "a", "b"][round % 3] + "\(round % 8)"
                guard let data = try? reader.object(forKey: key) else { continue }
                let value = WrittenValue(parsing: data, key: key)
                #expect(value != nil, "the reader read \(data.count) bytes for \(key) that are no value written for it")
                if let value { read.append((key, value.sequence)) }
            }
        }
        #expect(reader.recoveryIssues.isEmpty, "a reader reported writes in progress as damage: \(reader.recoveryIssues)")
        var written = Set<UInt64>()
        for writer in writers {
            writer.closeInput()
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
            for line in writer.lines() { if let operation = LoggedOperation(line), operation.kind == .set { written.insert(operation.sequence) } }
        }
        for (key, sequence) in read { #expect(written.contains(sequence), "\(key) #\(sequence) was never written") }
        #expect(!read.isEmpty, "no value was read")
    }

    // MARK: Helpers

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }

    /// Every key's sequence number in the store now, and the keys whose value is no complete value of theirs.
    private func finalState(of folder: TemporaryDirectory) throws -> (sequences: [String: UInt64], wrong: [String]) {
        let config = folder.diskConfig(sharedWriters: true)
        let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        var sequences: [String: UInt64] = [:]
        var wrong: [String] = []
        for key in disk.allKeys {
            guard let value = WrittenValue(parsing: try disk.object(forKey: key), key: key) else {
                wrong.append(key)
                continue
            }
            sequences[key] = value.sequence
        }
        return (sequences, wrong)
    }
}

/// One line of `StashTorture share`'s log.
struct LoggedOperation {
    enum Kind { case set, remove, get }
    var kind: Kind
    var key: String
    var sequence: UInt64
    /// What a read found (nil: missing).
    var found: UInt64?

    init?(_ line: Substring) {
        let words = line.split(separator: " ")
        guard words.count >= 3, let sequence = UInt64(words[2]) else { return nil }
        (key, self.sequence) = (String(words[1]), sequence)
        switch (words[0], words.count) {
        case ("set", 3): kind = .set
        case ("remove", 3): kind = .remove
        case ("get", 4):
            kind = .get
            found = UInt64(words[3])
            if found == nil, words[3] != "missing" { return nil }
        default: return nil
        }
    }
}

/// Whether the operations of several processes (each history in its own order) and the final state
/// fit one serialisation: a graph of what must come before what (program order; a write before the
/// reads that saw it, and those reads before that writer's next write of the key; the reader's own
/// earlier write of the key before the other write it saw; the other process's last write of a key
/// before the one the final state holds) that has no cycle. Every value is unique (its sequence number).
struct Serialisation {
    private(set) var problems: [String] = []

    init(histories: [[LoggedOperation]], final: [String: UInt64]) {
        var offsets: [Int] = []
        var total = 0
        for history in histories {
            offsets.append(total)
            total += history.count
        }
        var edges = [[Int]](repeating: [], count: total)
        var writes: [UInt64: Int] = [:] // sequence -> node
        var writesOfKey: [[String: [Int]]] = histories.map { _ in [:] } // per process: its write nodes of each key, in order
        for (process, history) in histories.enumerated() {
            for (index, operation) in history.enumerated() {
                let node = offsets[process] + index
                if index > 0 { edges[node - 1].append(node) }
                if operation.kind != .get {
                    writes[operation.sequence] = node
                    writesOfKey[process][operation.key, default: []].append(node)
                }
            }
        }
        func process(of node: Int) -> Int { offsets.lastIndex { $0 <= node } ?? 0 }
        /// The first write of `key` by `process` after node `node` (of that process), if any.
        func nextWrite(of key: String, by process: Int, after node: Int) -> Int? {
            writesOfKey[process][key]?.first { $0 > node }
        }
        func lastWrite(of key: String, by process: Int, before node: Int) -> Int? {
            writesOfKey[process][key]?.last { $0 < node }
        }
        for (reader, history) in histories.enumerated() {
            for (index, operation) in history.enumerated() where operation.kind == .get {
                let node = offsets[reader] + index
                guard let found = operation.found else { continue }
                guard let write = writes[found], histories[process(of: write)][write - offsets[process(of: write)]].key == operation.key,
                      histories[process(of: write)][write - offsets[process(of: write)]].kind == .set else {
                    problems.append("\(operation.key) read #\(found), which no process wrote for it")
                    continue
                }
                let writer = process(of: write)
                edges[write].append(node)
                if let next = nextWrite(of: operation.key, by: writer, after: write) { edges[node].append(next) }
                if writer != reader, let own = lastWrite(of: operation.key, by: reader, before: node) { edges[own].append(write) }
            }
        }
        for key in Set(histories.flatMap { $0.map(\.key) }) {
            let lasts = histories.indices.map { writesOfKey[$0][key]?.last }
            if let sequence = final[key] {
                guard let write = writes[sequence], lasts.contains(write) else {
                    problems.append("the final \(key) #\(sequence) is no process's last write of it")
                    continue
                }
                for case let other? in lasts where other != write { edges[other].append(write) }
            } else {
                let removals = lasts.compactMap { $0 }.filter { node in
                    histories[process(of: node)][node - offsets[process(of: node)]].kind == .remove
                }
                if removals.isEmpty, lasts.contains(where: { $0 != nil }) {
                    problems.append("\(key) is missing, but no process's last write of it removed it")
                } else if removals.count == 1, let removal = removals.first {
                    for case let other? in lasts where other != removal { edges[other].append(removal) }
                }
            }
        }
        // Kahn's algorithm: a cycle leaves nodes that never reach in-degree 0.
        var incoming = [Int](repeating: 0, count: total)
        for targets in edges { for target in targets { incoming[target] += 1 } }
        var ready = (0..<total).filter { incoming[$0] == 0 }
        var ordered = 0
        while let node = ready.popLast() {
            ordered += 1
            for target in edges[node] {
                incoming[target] -= 1
                if incoming[target] == 0 { ready.append(target) }
            }
        }
        if ordered < total { problems.append("no serialisation fits: \(total - ordered) operations are on a cycle of what must come before what") }
    }
}
