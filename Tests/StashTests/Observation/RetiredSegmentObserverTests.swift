import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Contract items 11 and 12 across processes, when the other process retires segments this process has
// not read yet: a segment started after this process's last call and emptied by a `removeAll`, or merged
// away by a compaction, before its next call. Its records are the only account of those changes: the
// writer leaves the file in place while a process that follows the store may still read it (a lock on
// the shared file says so), and removes it once none does.

@Suite("Observers of changes in segments another process retired before this process read them", .serialized)
struct RetiredSegmentObserverTests {
    /// A writer process with 64 KiB segments starts new ones and then empties the store (a value file
    /// among what it deletes), or overwrites until it compacts, all between two calls of this process;
    /// this process's observers must hear every change at its next call, in order, whether the writer is
    /// still open or closed meanwhile.
    @Test("observers hear every change in segments another process started and then emptied by removeAll or compacted away before this process's next call",
          arguments: [true, false])
    func changesInRetiredSegmentsAreHeard(sharedWriters: Bool) throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig(sharedWriters: sharedWriters)
        config.readOnly = !sharedWriters
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        var expected: [StorageChange] = []
        var present: [String: UInt64] = [:]
        func check(_ comment: String) throws {
            _ = try storage.existsObject(forKey: "unrelated") // any call catches up
            storage.waitForObservers()
            let heard = Array(changes.received)
            if heard != expected {
                Issue.record("\(comment): \(RetiredSegmentCaseTests.difference(heard, expected))")
                expected = heard // one report per difference, not one per later check
            }
            for key in (0..<10).map({ "k\($0)" }) {
                let got = try? storage.object(forKey: key)
                #expect(got.flatMap { WrittenValue(parsing: $0, key: key)?.sequence } == present[key], "\(comment): read of \(key)")
            }
        }
        for (round, closesFirst) in [false, true, false, true].enumerated() {
            let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"] + (sharedWriters ? ["--shared"] : []), input: .held)
            let watchdog = Watchdog(writer, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(writer.readLine() == "ready", "\(writer.errors)")
            var sequence: UInt64 = 0
            func set(_ key: String, _ size: Int) {
                sequence += 1
                #expect(writer.ask("set \(key) \(size)") == "wrote \(key) \(sequence)", "\(writer.errors)")
                expected.append(.add(key: key))
                present[key] = sequence
            }
            set("k0", 100)
            try check("round \(round): after the writer's open")
            if round % 2 == 0 {
                // About three segments of 64 KiB, then a removeAll that retires every one of them.
                for step in 0..<40 { set("k\(step % 10)", 5_000) }
                set("k5", 300_000) // a value file of its own, which the removeAll deletes too
                #expect(writer.ask("clear") == "cleared", "\(writer.errors)")
                expected.append(.removeAll)
                present = [:]
                set("k9", 100)
            } else {
                // Overwrites of three keys: dead bytes past the threshold, and compactions that merge
                // segments this process never read, with the writer's background thread or in steps.
                for step in 0..<90 { set("k\(step % 3)", 5_000) }
            }
            if closesFirst {
                writer.closeInput()
                #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
            }
            try check("round \(round)\(closesFirst ? ", the writer closed" : "")")
            if !closesFirst {
                writer.closeInput()
                #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
                try check("round \(round), after the writer's close")
            }
        }
        #expect(storage.recoveryIssues.isEmpty, "\(storage.recoveryIssues)")
    }

    /// What a writer keeps for a follower goes once no follower needs it: at once without observers,
    /// at the writer's next change once the observing follower is released, and at the next writer's
    /// open once it caught up; none of it is reported as damage.
    @Test("a writer keeps a retired segment only while an observing reader may still read it: none for a reader without observers, none left once the reader caught up or was released, and none reported as damage")
    func retainedSegmentsGoOnceUnneeded() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        /// Segments below the newest one that holds records: what a removeAll superseded.
        func supersededCount() throws -> Int {
            let ids = try RetiredSegmentCaseTests.segmentIDs(path)
            return max(0, ids.count - 2) // the clear's segment, and perhaps one just started after it
        }
        /// A writer process that fills three segments and empties the store, `rounds` times, then closes.
        func writeAndClear(rounds: Int, between: () throws -> Void = {}) throws {
            let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
            let watchdog = Watchdog(writer, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(writer.readLine() == "ready", "\(writer.errors)")
            for round in 0..<rounds {
                for step in 0..<40 { #expect(writer.ask("set k\(step % 10) 5000").hasPrefix("wrote"), "\(writer.errors)") }
                #expect(writer.ask("clear") == "cleared", "\(writer.errors)")
                if round == 0 { try between() }
            }
            writer.closeInput()
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
        }
        var config = folder.diskConfig()
        config.readOnly = true
        do {
            // No observer: nothing is kept for the reader.
            let reader = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
            _ = try reader.existsObject(forKey: "k0")
            try writeAndClear(rounds: 1)
            #expect(try supersededCount() == 0, "segments were kept for a reader without observers")
            _ = try reader.existsObject(forKey: "k0")
            #expect(reader.recoveryIssues.isEmpty, "\(reader.recoveryIssues)")
        }
        do {
            // An observing reader that does not call: kept past the writer's close; once it has caught up,
            // the next writer's open removes them without a report.
            var reader: Storage<Data>? = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
            let changes = Recorder<StorageChange>()
            reader?.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
            _ = reader?.allKeys // through the queue: after the mark the observer's registration placed there
            try writeAndClear(rounds: 1)
            #expect(try supersededCount() > 0, "nothing was kept for an observing reader")
            _ = try reader?.existsObject(forKey: "k0")
            reader?.waitForObservers()
            #expect(changes.received.count == 41, "\(changes.received.count) changes heard")
            #expect(reader?.recoveryIssues.isEmpty == true, "\(reader?.recoveryIssues ?? [])")
            try writeAndClear(rounds: 0)
            #expect(try supersededCount() == 0, "a writer's open left what no reader needs any longer")
            // Released without calling again: the writer's next change removes what it kept.
            try writeAndClear(rounds: 2) {
                let kept = try supersededCount()
                #expect(kept > 0, "nothing was kept for an observing reader")
                reader = nil
            }
        }
        #expect(try supersededCount() == 0, "segments were kept for a released reader")
        let writer = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        #expect(writer.recoveryIssues.isEmpty, "\(writer.recoveryIssues)")
    }

    /// A writer process works through hundreds of sets and removals sent at once, rolling 64 KiB
    /// segments and compacting, while this process's reader calls without pause: every catch-up that
    /// opens the store anew races the writer's appends. Once the writer is done, the observer must have
    /// heard each change once, in order: none the open took in without telling it, none told twice.
    @Test("a reader that opens the store anew while a writer process appends tells its observers each change once, in order")
    func changesAppendedDuringAnOpenAreHeardOnce() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig()
        config.readOnly = true
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        let writer = try ChildProcess(tool, ["step", path, "--small-thresholds"], input: .held)
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(writer.readLine() == "ready", "\(writer.errors)")
        _ = storage.allKeys // the writer's open, and the mark the observer's registration placed
        var random = SeededGenerator(seed: 7)
        var (commands, expected, present) = ([String](), [StorageChange](), Set<String>())
        for _ in 0..<600 {
            let key = "k\(random.below(20))"
            if random.below(6) == 0 {
                commands.append("remove \(key)")
                if present.remove(key) != nil { expected.append(.remove(key: key)) }
            } else {
                commands.append("set \(key) \(2_000 + random.below(3_000))")
                present.insert(key)
                expected.append(.add(key: key))
            }
        }
        try RetiredSegmentCaseTests.callWhileWorking(storage, writer, commands, keys: 20)
        _ = try storage.existsObject(forKey: "unrelated")
        storage.waitForObservers()
        let heard = changes.received
        #expect(heard == expected, "\(RetiredSegmentCaseTests.difference(heard, expected))")
        writer.closeInput()
        #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
    }
}
