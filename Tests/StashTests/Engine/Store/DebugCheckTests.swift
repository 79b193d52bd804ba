import Foundation
import Testing
@testable import Stash
@testable import StashEngine

#if DEBUG
private let isDebugBuild = true
#else
private let isDebugBuild = false
#endif

/// Debug builds check the thread discipline of Docs/Architecture.md ("Threads and queues"; Contract
/// item 4): the disk engine's entry points trap when called off the store's queue, and nested locks
/// trap when taken out of order. Each violation runs in a child process (`StashTorture debug-check`,
/// through ``ChildProcess``, so the tests build with Swift 6.0's testing library, which has no exit
/// tests), which must die with the check's message. (Not named "Concurrency…", so `.ci/run`'s
/// ThreadSanitizer filter leaves these child processes out.)
@Suite("Debug-build concurrency checks", .enabled(if: isDebugBuild, "the checks are compiled into debug builds only"))
struct DebugCheckTests {
    // Contract 4: an engine entry point called off the store's queue stops a debug build.
    @Test("a disk store read off its engine's queue traps in a debug build")
    func offQueueReadTraps() throws {
        let run = try runViolation("off-queue")
        #expect(run.wasSignalled, "the child got past the check (\(run.ending)): \(run.output)")
        #expect(run.stderr.contains("DiskStore.read(_:now:) called off its engine's queue"), "stderr: \(run.stderr)")
    }

    @Test("the same read on the queue passes the check")
    func onQueueReadPasses() throws {
        let directory = TemporaryDirectory()
        let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        try storage.setObject(Data("v".utf8), forKey: "k")
        #expect(try storage.engine.sync { try $0.read("k", now: Date()).data } == Data("v".utf8))
    }

    @Test("taking the engine registry while holding a store's index traps in a debug build (lock order)")
    func lockOrderViolationTraps() throws {
        let run = try runViolation("lock-order")
        #expect(run.wasSignalled, "the child got past the check (\(run.ending)): \(run.output)")
        #expect(run.stderr.contains("lock order violated: engineRegistry taken while holding storeIndex"), "stderr: \(run.stderr)")
    }

    /// Runs `StashTorture debug-check CHECK` on a fresh store and returns how it ended.
    private func runViolation(_ check: String) throws -> ChildProcess.Run {
        let directory = TemporaryDirectory()
        let torture = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        let run = try ChildProcess.run(torture, ["debug-check", check, directory.storePath()], deadline: TestDeadline.long)
        #expect(!run.timedOut, "the child hung instead of trapping")
        return run
    }
}
