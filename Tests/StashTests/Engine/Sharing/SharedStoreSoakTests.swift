import Foundation
import StashTestSupport
import Testing

/// Contract item 11 under faults: two writer processes (`allowsWritersInOtherProcesses`), a read-only
/// reader process and `stash get` share one store for ~25 s while writers and the reader are killed
/// and stopped, `stash-shared` is deleted and `removeAll` runs; every read is checked against the
/// writers' acknowledged logs (`StashTorture soak`, Tests/StashTorture/SoakCheck.swift). The long
/// run is `swift run StashTorture soak DIR --seconds 300` (Docs/Reliability.md).
@Suite("Shared store soak")
struct SharedStoreSoakTests {
    @Test("every read of a store shared by processes under kills, stops, deletions of stash-shared and removeAll is one the writers acknowledged",
          .timeLimit(.minutes(TestDeadline.timeLimitMinutes)))
    func soakUnderFaults() async throws {
        let torture = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built")
        let directory = TemporaryDirectory()
        var arguments = ["soak", directory.storePath(), "--seconds", "25", "--seed", "7"]
        if let stash = builtExecutable(named: "stash") { arguments += ["--stash", stash.path] }
        // Waited for on a thread of its own: half a minute of a blocked thread of the concurrency pool
        // (two threads on two cores) would hold up the other tests' tasks.
        let command = arguments
        let run = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try ChildProcess.run(torture, command, deadline: TestDeadline.long) })
            }
        }
        #expect(!run.timedOut, "the soak did not finish: \(run.output)")
        #expect(run.status == 0, "\(run.output)\(run.stderr)")
        #expect(run.output.contains("wrong reads: 0"), "\(run.output)")
        // It did work: writes were acknowledged and reads made (a soak that reads nothing checks nothing).
        let calls = run.output.split(separator: "\n").first { $0.hasPrefix("calls: ") } ?? ""
        #expect(!calls.contains(" 0 acknowledged") && !calls.contains(", 0 reads"), "\(run.output)")
    }
}
