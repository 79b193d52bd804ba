// `Process` exists on macOS and Linux only: on iOS, tvOS, watchOS and visionOS (the package scheme
// builds this target for them too) there is no child process to run, and this file compiles to nothing.
#if os(macOS) || os(Linux)
public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way the tests run another process: `stash`, `StashTorture`, `StashRedisChild`,
/// `redis-server`, or `strace` running one of them.
///
/// Its standard output and standard error are drained by two threads of their own from the moment it
/// starts, so a child never blocks on a full pipe whatever it prints and whichever stream the test
/// reads first (reading two pipes one after the other deadlocks once the other one fills up). Its
/// standard input is empty, a file holding given bytes, or a pipe the test writes lines to.
public final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: the collected bytes live in `streams`, behind its lock; `process`, the pipes
    // and `inputFile` are set up in init and only read afterwards.

    /// What the child reads on its standard input.
    public enum Input: Sendable {
        /// Nothing: end of file at once.
        case empty
        /// These bytes, then end of file (from a file, so the child need not read them at all).
        case data(Data)
        /// A pipe that stays open until ``closeInput()``: the test writes with ``send(_:)`` or ``ask(_:)``.
        case held
    }

    /// How a child ended.
    public enum Ending: Sendable, Equatable, CustomStringConvertible {
        /// It exited by itself with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)
        /// `waitpid` failed with this `errno` (ECHILD: the child was reaped by someone else), so how
        /// it ended is not known. Every check of a run treats it as a failure: ``status`` is then
        /// ``unknownStatus``, and ``exitedNormally``, ``wasKilled`` and ``wasSignalled`` are false.
        case unknown(errno: Int32)

        public var description: String {
            switch self {
            case .exited(let status): return "exited with status \(status)"
            case .signalled(let signal): return "ended by signal \(signal)"
            case .unknown(let number):
                return "ended, but its exit status is unknown: waitpid failed with errno \(number)"
                    + (number == ECHILD ? " (ECHILD: the child was reaped by someone else)" : "")
            }
        }
    }

    /// The ``status`` of a child whose ending is unknown: no exit status or signal number, so no
    /// check of a status (`== 0`, `== 3`, `> 0`) passes by accident.
    public static let unknownStatus: Int32 = -1

    /// A finished run: how it ended and what it printed.
    public struct Run: Sendable {
        /// How the child ended.
        public var ending: Ending
        /// Its exit status, or the signal that ended it; ``ChildProcess/unknownStatus`` when unknown.
        public var status: Int32 { ChildProcess.status(of: ending) }
        public var stdout: Data
        /// What it wrote to standard error; when its ending is unknown, led by a line that says so,
        /// so that every check that prints it says why it failed.
        public var stderr: String
        /// Whether the child exited by itself (rather than by a signal; false when unknown).
        public var exitedNormally: Bool { if case .exited = ending { return true } else { return false } }
        /// Whether a signal ended it (false when unknown).
        public var wasSignalled: Bool { if case .signalled = ending { return true } else { return false } }
        /// Whether it was killed because it outlived the deadline.
        public var timedOut: Bool
        public var output: String { String(decoding: stdout, as: UTF8.self) }
    }

    private let process: SpawnedProcess
    private let inputPipe = Pipe()
    private let outputPipe = Pipe()
    private let errorPipe = Pipe()
    private var inputFile: URL?
    /// What the drain threads collected. Apart from `self`, so that the threads do not keep this
    /// object (whose deinit kills a child still running) alive.
    private let streams = Streams()
    private var condition: NSCondition { streams.condition }
    private var received: Data { streams.received }
    private var outputEnded: Bool { streams.outputEnded }
    private var errorsEnded: Bool { streams.errorsEnded }

    /// Starts `executable` with `arguments`; `environment` replaces the inherited one when given.
    public init(_ executable: URL, _ arguments: [String], input: Input = .empty,
                environment: [String: String]? = nil, currentDirectory: URL? = nil) throws {
        let standardInput: FileHandle
        switch input {
        case .empty:
            standardInput = FileHandle.nullDevice
        case .data(let bytes):
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("StashChildInput-\(UUID().uuidString)")
            try bytes.write(to: file)
            inputFile = file
            standardInput = try FileHandle(forReadingFrom: file)
        case .held:
            // A child that dies while the test still writes must not take the test process with it.
            _ = ignoreBrokenPipes
            standardInput = inputPipe.fileHandleForReading
        }
        process = try SpawnedProcess(executable.path, arguments, environment: environment ?? ProcessInfo.processInfo.environment,
                                     currentDirectory: currentDirectory?.path, standardInput: standardInput.fileDescriptor,
                                     standardOutput: outputPipe.fileHandleForWriting.fileDescriptor,
                                     standardError: errorPipe.fileHandleForWriting.fileDescriptor)
        // The child has its own copies: the drains see the end of its output once it closes them.
        try? outputPipe.fileHandleForWriting.close()
        try? errorPipe.fileHandleForWriting.close()
        if case .held = input { try? inputPipe.fileHandleForReading.close() } else if case .data = input { try? standardInput.close() }
        drain(outputPipe.fileHandleForReading, isOutput: true)
        drain(errorPipe.fileHandleForReading, isOutput: false)
    }

    /// The form the crash and two-process tests were written with; `folder` is not needed any more
    /// (standard error is drained into memory like standard output).
    public convenience init(_ executable: URL, _ arguments: [String], errorsIn folder: URL, holdInput: Bool = false) throws {
        try self.init(executable, arguments, input: holdInput ? .held : .empty)
    }

    deinit {
        if process.isRunning { kill() }
        try? inputPipe.fileHandleForWriting.close()
        if let inputFile { try? FileManager.default.removeItem(at: inputFile) }
    }

    /// Runs `executable` to its end and returns what it printed; a child still running after
    /// `deadline` seconds is killed (``Run/timedOut``).
    public static func run(_ executable: URL, _ arguments: [String], input: Data? = nil,
                           environment: [String: String]? = nil, deadline: TimeInterval = TestDeadline.long) throws -> Run {
        let child = try ChildProcess(executable, arguments, input: input.map(Input.data) ?? .empty, environment: environment)
        let timedOut = !child.wait(upTo: deadline)
        return Run(ending: child.ending, stdout: child.output, stderr: child.errors, timedOut: timedOut)
    }

    private func drain(_ handle: FileHandle, isOutput: Bool) {
        let thread = Thread { [streams] in
            while true {
                let chunk = handle.availableData // blocks until bytes or end of file
                streams.condition.lock()
                if chunk.isEmpty {
                    if isOutput { streams.outputEnded = true } else { streams.errorsEnded = true }
                } else if isOutput {
                    streams.received += chunk
                } else {
                    streams.errors += chunk
                }
                streams.condition.broadcast()
                streams.condition.unlock()
                if chunk.isEmpty { return }
            }
        }
        thread.start()
    }

    /// Blocks until the child has printed something (or closed its output): it is then past opening the store.
    /// - Returns: Whether it printed anything.
    @discardableResult
    public func waitForOutput() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while received.isEmpty, !outputEnded { condition.wait() }
        return !received.isEmpty
    }

    /// Blocks until the child's output contains `text`, it closes its output, or `seconds` pass.
    /// - Returns: Whether `text` appeared.
    public func waitForOutput(containing text: String, upTo seconds: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        let needle = Data(text.utf8)
        condition.lock()
        defer { condition.unlock() }
        while received.range(of: needle) == nil {
            if outputEnded || !condition.wait(until: deadline) { return received.range(of: needle) != nil }
        }
        return true
    }

    /// The next line the child prints (without its newline); empty once its output ended.
    public func readLine() -> String {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let newline = received[streams.consumed...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: received[streams.consumed..<newline], as: UTF8.self)
                streams.consumed = newline + 1
                return line
            }
            if outputEnded { return "" }
            condition.wait()
        }
    }

    /// Writes `text` to the child's standard input (``Input/held`` only).
    public func send(_ text: String) {
        try? inputPipe.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    /// Sends `line` and returns the child's one-line answer.
    public func ask(_ line: String) -> String {
        send(line + "\n")
        return readLine()
    }

    /// Ends the child's standard input.
    public func closeInput() {
        try? inputPipe.fileHandleForWriting.close()
    }

    /// Kills the child with SIGKILL, as a crash or a power cut would stop it, and waits for it.
    public func kill() {
        sendSignal(process.processIdentifier, SIGKILL)
        sendSignal(process.processIdentifier, SIGCONT) // a stopped child dies only once continued
        process.waitUntilExit()
    }

    /// Sends `signal` to the child (SIGSTOP and SIGCONT freeze and thaw it, as a stalled host would).
    public func signal(_ signal: Int32) {
        sendSignal(process.processIdentifier, signal)
    }

    /// Waits for the child to end by itself, killing it after `seconds`.
    /// - Returns: Whether it ended by itself in time.
    @discardableResult
    public func wait(upTo seconds: TimeInterval) -> Bool {
        let ended = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { [process] in
            process.waitUntilExit()
            ended.signal()
        }
        if ended.wait(timeout: .now() + seconds) == .success { return true }
        kill()
        return false
    }

    /// Waits for the child to end, however long it takes.
    public func waitUntilExit() {
        process.waitUntilExit()
    }

    /// How many whole lines the child has printed so far, and whether its output ended; does not wait.
    public var linesSoFar: (count: Int, ended: Bool) {
        condition.lock()
        defer { condition.unlock() }
        return (received.reduce(0) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }, outputEnded)
    }

    /// Everything the child printed on standard output; waits until it ended and its output is drained.
    public var output: Data {
        process.waitUntilExit()
        condition.lock()
        defer { condition.unlock() }
        while !outputEnded { condition.wait() }
        return received
    }

    /// Everything the child printed; call after it has ended.
    public func text() -> String {
        String(decoding: output, as: UTF8.self)
    }

    /// Everything the child printed, as complete lines; call after it has ended.
    public func lines() -> [Substring] {
        // A line is complete once its newline is out; the children write each line with one write().
        text().split(separator: "\n", omittingEmptySubsequences: false).dropLast().map { $0 }
    }

    /// What the child wrote to standard error: all of it once the child has ended, what came so far
    /// while it runs. When its ending is unknown, a first line says so.
    public var errors: String {
        let ended = !process.isRunning
        let note = ended ? Self.note(for: ending) : ""
        condition.lock()
        defer { condition.unlock() }
        while ended, !errorsEnded { condition.wait() }
        return note + String(decoding: streams.errors, as: UTF8.self)
    }

    public var isRunning: Bool { process.isRunning }

    /// The child's process identifier.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// How the child ended; waits for it to end.
    public var ending: Ending {
        switch process.ending {
        case .exited(let status): return .exited(status)
        case .signalled(let signal): return .signalled(signal)
        case .unknown(let number): return .unknown(errno: number)
        }
    }

    /// Its exit status, or the signal that ended it; ``unknownStatus`` when that is unknown.
    public var status: Int32 { Self.status(of: ending) }
    /// Whether it exited by itself (false when its ending is unknown).
    public var exitedNormally: Bool { if case .exited = ending { return true } else { return false } }
    /// Whether SIGKILL ended it (false when its ending is unknown: a kill test then fails).
    public var wasKilled: Bool {
        // A child of strace that was killed shows as strace dying of the same signal (or exiting 128+9).
        switch ending {
        case .signalled(let signal): return signal == SIGKILL
        case .exited(let status): return status == 128 + SIGKILL
        case .unknown: return false
        }
    }

    static func status(of ending: Ending) -> Int32 {
        switch ending {
        case .exited(let status), .signalled(let status): return status
        case .unknown: return unknownStatus
        }
    }

    /// The first line of ``errors`` for a child whose ending is unknown; empty otherwise.
    static func note(for ending: Ending) -> String {
        if case .unknown = ending { return "[ChildProcess] the child \(ending): treat the run as failed\n" }
        return ""
    }
}

/// The bytes a child printed so far, behind `condition`.
private final class Streams: @unchecked Sendable {
    // @unchecked Sendable: every stored property but `condition` is only touched while it is locked.
    let condition = NSCondition()
    var received = Data()
    /// How much of `received` ``ChildProcess/readLine()`` has returned.
    var consumed = 0
    var errors = Data()
    var outputEnded = false
    var errorsEnded = false
}

private func sendSignal(_ pid: pid_t, _ signal: Int32) { _ = kill(pid, signal) }

/// Set once: a write to a pipe whose reader died fails with EPIPE instead of killing the test process.
private let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

/// `strace`, which the crash tests use to kill a child at an exact system call, if this machine has it.
/// `.ci/run` installs it; on a machine without it those tests are skipped, unless `STASH_REQUIRE_STRACE` is set.
public enum Strace {
    public static let executable: URL? = ["/usr/bin/strace", "/bin/strace"].map(URL.init(fileURLWithPath:))
        .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    public static let isRequired = ProcessInfo.processInfo.environment["STASH_REQUIRE_STRACE"] != nil
    public static let isAvailable = executable != nil || isRequired

    /// The arguments that make strace run `command` and kill it with SIGKILL when it enters
    /// the `occurrence`-th call of a system call matching `syscalls` (a comma-separated strace set; `?` ignores calls this architecture lacks).
    /// - Parameter path: Only calls on this file count (strace `-P`: by name or by a descriptor open on it).
    public static func arguments(killAt syscalls: String, occurrence: Int, onlyOn path: String? = nil, command: [String]) -> [String] {
        ["-f", "-qq", "-o", "/dev/null"] + (path.map { ["-P", $0] } ?? []) + ["-e", "trace=\(syscalls)",
         "-e", "inject=\(syscalls):signal=KILL:when=\(occurrence)", "--"] + command
    }

    /// The system calls that write into a file, for ``arguments(killAt:occurrence:onlyOn:command:)``.
    public static let writes = "?write,?pwrite64,?writev,?pwritev"
}
#endif
