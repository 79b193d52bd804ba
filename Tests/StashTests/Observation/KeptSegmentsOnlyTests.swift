import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#endif

// Kept segments (`<n>.segment.kept`) after a writer was killed between renaming them and starting the
// segment that follows (`deleteEverything`): the next writer numbers its segments past them, keeps the value
// files they name, and the follower they were kept for hears everything. Found by a review of the rename.

@Suite("A store left with kept segments only: numbering, value files, and the follower's changes", .serialized)
struct KeptSegmentsOnlyTests {
    typealias Writer = RetiredSegmentCaseTests.Writer

    static func names(_ path: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: path).sorted()
    }

    /// Leaves the files as a writer killed inside deleteEverything(freeingSpace: false) leaves them
    /// (after its retirements, before its roll): key directory gone, the segment the follower reads
    /// (`followed`) removed, every later one renamed `.kept` (the follower's mark is below them).
    static func simulateKillInsideDeleteEverything(_ path: String, followed: UInt32) throws {
        for name in try names(path) {
            if name == StoreFolder.directoryName || name == StoreFolder.usesName { try FileManager.default.removeItem(atPath: path + "/" + name) }
            guard let id = SegmentFile.id(ofName: name) else { continue }
            if id <= followed {
                try FileManager.default.removeItem(atPath: path + "/" + name)
            } else {
                try FileManager.default.moveItem(atPath: path + "/" + name, toPath: path + "/" + name + SegmentFile.keptSuffix)
            }
        }
    }

    /// Kept segments are invisible to segment numbering: a writer that opens a folder whose only
    /// segments are kept ones (a writer killed between deleteEverything's renames and its roll) numbers
    /// its new segments from 1 again, reusing the kept segments' numbers. The observing follower that
    /// they were kept for then reads the new segment 2 in place of the kept one (the reader tries the
    /// plain name first), skips the new segment 1 (its number is the one it last read), and misses both
    /// the kept segments' sets and the new writer's first sets.
    @Test("a writer opening a folder of kept segments only does not reuse their numbers; the follower hears everything")
    func keptNumbersReusedAfterKillInsideDeleteEverything() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try RetiredSegmentCaseTests.observedReader(folder) // marked at segment 1
        let first = try Writer(path, small: true) // 64 KiB segments
        var expected: [StorageChange] = []
        for index in 0..<30 { first.set("a\(index)", 5_000); expected.append(.add(key: "a\(index)")) }
        first.close()
        let before = try Self.names(path)
        try Self.simulateKillInsideDeleteEverything(path, followed: 1)
        let kept = try Self.names(path).filter { $0.hasSuffix(SegmentFile.keptSuffix) }
        try #require(kept.count >= 2, "files: \(before)")
        let second = try Writer(path, small: true)
        for index in 0..<20 { second.set("b\(index)", 5_000); expected.append(.add(key: "b\(index)")) }
        let during = try Self.names(path)
        let plain = Set(during.compactMap(SegmentFile.id(ofName:)))
        let keptIDs = Set(during.compactMap { $0.hasSuffix(SegmentFile.keptSuffix) ? SegmentFile.id(ofName: String($0.dropLast(SegmentFile.keptSuffix.count))) : nil })
        #expect(plain.isDisjoint(with: keptIDs), "new segments reuse the numbers of kept ones: \(during)")
        let heard = try RetiredSegmentCaseTests.heard(storage, changes)
        let heardB = heard.filter { if case .add(let key) = $0 { key.hasPrefix("b") } else { false } }
        #expect(heardB.count == 20, "sets of the new writer heard: \(heardB.count) of 20; all heard: \(heard)")
        let heardA = heard.filter { if case .add(let key) = $0 { key.hasPrefix("a") } else { false } }
        #expect(heardA.count == 30, "sets of the first writer heard: \(heardA.count) of 30 (files \(during))")
        second.close()
    }

    /// The same folder state, with a value in a file set in a kept segment: the next writer's open
    /// removes value files no replayed record names unless a follower may still read a record up to the
    /// newest segment's end; with kept segments only, the newest is taken as (0, 0), so the value file the
    /// follower needs (named in a kept segment it has not read) is deleted. Also: the follower's catch-up
    /// reads kept segments only up to the newest plain segment's number (none here), so it hears none of them.
    @Test("a writer opening a folder of kept segments only keeps the value files they name for the follower")
    func keptValueFileRemovedWhenOnlyKeptSegmentsRemain() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try RetiredSegmentCaseTests.observedReader(folder) // marked at segment 1
        let first = try Writer(path, small: true)
        for index in 0..<15 { first.set("a\(index)", 5_000) }
        first.set("big", 300_000)
        for index in 15..<30 { first.set("a\(index)", 5_000) }
        first.close()
        try Self.simulateKillInsideDeleteEverything(path, followed: 1)
        let before = try Self.names(path)
        try #require(try RetiredSegmentCaseTests.valueFileCount(path) == 1, "\(before)")
        try Writer(path, small: true).close()
        let after = try Self.names(path)
        #expect(try RetiredSegmentCaseTests.valueFileCount(path) == 1, "the next writer's open removed the value file kept for the follower: before \(before), after \(after)")
        let heard = try RetiredSegmentCaseTests.heard(storage, changes)
        #expect(heard.contains(.add(key: "big")) && heard.count == 31, "heard \(heard.count): \(heard)")
    }

    /// The folder state of the tests above made by a real kill (strace, as RetentionSafetyTests does): a
    /// writer empties the store by removals (deleteEverything(freeingSpace: false)) while an idle observing
    /// reader is marked at segment 1, and is killed at the creation of the segment its roll starts.
    /// The next writer numbers from 1 again: `00000002.segment` beside `00000002.segment.kept`, and the
    /// reader hears neither the first writer's changes nor all of the second's.
    @Test("killed inside deleteEverything with a follower behind: the next writer does not reuse kept numbers",
          .enabled(if: Strace.isAvailable))
    func killInsideDeleteEverythingThenNextWriterReusesNumbers() throws {
        let folder = TemporaryDirectory()
        let path = folder.storePath()
        let (storage, changes) = try RetiredSegmentCaseTests.observedReader(folder) // marked at segment 1
        let tool = try #require(builtExecutable(named: "StashTorture"))
        let child = try ChildProcess(try #require(Strace.executable),
                                     Strace.arguments(killAt: "openat", occurrence: 1, onlyOn: SegmentFile.name(of: 3),
                                                      command: [tool.path, "step", path, "--small-thresholds"]), input: .held)
        let watchdog = Watchdog(child, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(child.readLine() == "ready", "\(child.errors)")
        #expect(child.ask("set m0 60000").hasPrefix("wrote"), "\(child.errors)") // segment 1
        #expect(child.ask("set m1 10000").hasPrefix("wrote"), "\(child.errors)") // segment 2
        #expect(child.ask("remove m1") == "removed m1", "\(child.errors)")
        child.send("remove m0\n") // empties the store: deleteEverything(freeingSpace: false), killed at its roll
        let answer = child.readLine()
        child.closeInput()
        _ = child.wait(upTo: TestDeadline.long)
        let afterKill = try Self.names(path)
        try #require(answer != "removed m0", "not killed; files \(afterKill)")
        let second = try Writer(path, small: true)
        second.set("b0", 60_000)
        second.set("b1", 10_000)
        let during = try Self.names(path)
        let heard = try RetiredSegmentCaseTests.heard(storage, changes)
        second.close()
        #expect(!(during.contains(SegmentFile.name(of: 2)) && during.contains(SegmentFile.name(of: 2) + SegmentFile.keptSuffix)),
                "after the kill: \(afterKill); with the next writer: \(during)")
        let expected: [StorageChange] = [.add(key: "m0"), .add(key: "m1"), .remove(key: "m1"), .remove(key: "m0"), .add(key: "b0"), .add(key: "b1")]
        #expect(heard == expected, "heard \(heard)")
    }
}
