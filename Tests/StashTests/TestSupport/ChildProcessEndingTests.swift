import Foundation
import StashTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How the tests' child processes end, as ``ChildProcess`` reports it: a child it could not reap
/// (`waitpid` fails with ECHILD) has an unknown ending, which no check of a run mistakes for a kill,
/// an exit or a status.
@Suite("A child process's ending")
struct ChildProcessEndingTests {
    @Test("a child reaped by someone else ends as unknown: not killed, not exited, no status, and its errors say why")
    func reapedElsewhereIsUnknown() throws {
        let child = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", "exit 0"])
        var status: Int32 = 0
        var reaped: Int32
        repeat { reaped = waitpid(child.processIdentifier, &status, 0) } while reaped == -1 && errno == EINTR
        try #require(reaped == child.processIdentifier, "the test could not reap its child first")
        #expect(!child.isRunning, "a child reaped elsewhere is not running")
        #expect(child.ending == .unknown(errno: ECHILD))
        #expect(!child.wasKilled, "a made-up SIGKILL would pass a crash test's check")
        #expect(!child.exitedNormally)
        #expect(child.status == ChildProcess.unknownStatus)
        #expect(child.errors.contains("exit status is unknown") && child.errors.contains("reaped by someone else"), "\(child.errors)")
    }

    @Test("a child killed with SIGKILL, one that exits, and one that a signal ends end as they did", arguments: ["kill", "exit 3", "term"])
    func knownEndings(how: String) throws {
        let script = how == "term" ? "kill -TERM $$" : how == "kill" ? "exec sleep 60" : how
        let child = try ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script])
        if how == "kill" { child.kill() } else { child.waitUntilExit() }
        switch how {
        case "kill": #expect(child.wasKilled && child.ending == .signalled(SIGKILL) && child.status == SIGKILL)
        case "term": #expect(child.ending == .signalled(SIGTERM) && !child.wasKilled && !child.exitedNormally)
        default: #expect(child.exitedNormally && child.status == 3 && !child.wasKilled)
        }
        #expect(!child.errors.contains("unknown"), "\(child.errors)")
    }
}
