import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process the crash and two-process tests start, read and kill: `StashTorture`, `stash`, or
/// `strace` running one of them.
final class ChildProcess {
    private let process = Process()
    private let output = Pipe()
    private let input = Pipe()
    private let errorFile: URL
    private var received = Data()

    /// Starts `executable` with `arguments`; standard error goes to a file in `folder`. Its standard
    /// input stays open until ``closeInput()`` if `holdInput`, else it is empty.
    init(_ executable: URL, _ arguments: [String], errorsIn folder: URL, holdInput: Bool = false) throws {
        errorFile = folder.appendingPathComponent("stderr-\(UUID().uuidString)")
        try Data().write(to: errorFile)
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = holdInput ? input : FileHandle.nullDevice
        process.standardOutput = output
        process.standardError = try FileHandle(forWritingTo: errorFile)
        try process.run()
    }

    deinit {
        if process.isRunning { kill() }
        try? FileManager.default.removeItem(at: errorFile)
    }

    /// Blocks until the child has printed something (or ended): it is then past opening the store.
    /// - Returns: Whether it printed anything.
    @discardableResult
    func waitForOutput() -> Bool {
        while received.isEmpty {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return false } // end of file: the child is gone
            received += chunk
        }
        return true
    }

    /// Ends the child's standard input.
    func closeInput() {
        try? input.fileHandleForWriting.close()
    }

    /// Kills the child with SIGKILL, as a crash or a power cut would stop it, and waits for it.
    func kill() {
        sendSIGKILL(process.processIdentifier)
        process.waitUntilExit()
    }

    /// Waits for the child to end by itself, killing it after `seconds`.
    /// - Returns: Whether it ended by itself in time.
    @discardableResult
    func wait(upTo seconds: TimeInterval) -> Bool {
        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [process] in
            process.waitUntilExit()
            ended.signal()
        }
        if ended.wait(timeout: .now() + seconds) == .success { return true }
        kill()
        return false
    }

    /// Everything the child printed; call after it has ended.
    func text() -> String {
        received += output.fileHandleForReading.readDataToEndOfFile()
        return String(decoding: received, as: UTF8.self)
    }

    /// Everything the child printed, as complete lines; call after it has ended.
    func lines() -> [Substring] {
        // A line is complete once its newline is out; the child writes each line with one write().
        text().split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0 }
    }

    /// What the child wrote to standard error.
    var errors: String { String(decoding: (try? Data(contentsOf: errorFile)) ?? Data(), as: UTF8.self) }

    var status: Int32 { process.terminationStatus }
    var wasKilled: Bool {
        // A child of strace that was killed shows as strace dying of the same signal (or exiting 128+9).
        (process.terminationReason == .uncaughtSignal && status == SIGKILL) || status == 128 + SIGKILL
    }
}

private func sendSIGKILL(_ pid: pid_t) { _ = kill(pid, SIGKILL) }

/// `strace`, which the crash tests use to kill a child at an exact system call, if this machine has it.
/// `.ci/run` installs it; on a machine without it those tests are skipped, unless `STASH_REQUIRE_STRACE` is set.
enum Strace {
    static let executable: URL? = ["/usr/bin/strace", "/bin/strace"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    static let isRequired = ProcessInfo.processInfo.environment["STASH_REQUIRE_STRACE"] != nil
    static let isAvailable = executable != nil || isRequired

    /// The arguments that make strace run `command` and kill it with SIGKILL when it enters
    /// the `occurrence`-th call of a system call matching `syscalls` (a comma-separated strace set; `?` ignores calls this architecture lacks).
    static func arguments(killAt syscalls: String, occurrence: Int, command: [String]) -> [String] {
        ["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(syscalls)",
         "-e", "inject=\(syscalls):signal=KILL:when=\(occurrence)", "--"] + command
    }
}
