// Child processes exist on macOS and Linux only (see ChildProcess.swift).
#if os(macOS) || os(Linux)
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child started with `posix_spawn` and reaped with `waitpid`: what ``ChildProcess`` runs on.
///
/// Not Foundation's `Process`: on Linux, swift-corelibs-foundation's `Process.run()` crashed twice in
/// loaded CI runs, inside its own code (a `memcpy`, then a fatal error on a read interrupted by a
/// signal, `EINTR`, which it does not retry), while the test process launched and reaped children at
/// a high rate. Spawning directly leaves nothing between the test and the system calls.
final class SpawnedProcess: @unchecked Sendable {
    // @unchecked Sendable: `ended` is only touched while `condition` is locked; `pid` never changes.

    /// How a child ended.
    enum Ending: Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// `waitpid` failed with this `errno` (ECHILD: the child was reaped by someone else, or the
        /// process ignores SIGCHLD), so how it ended cannot be known. Never turned into a status:
        /// a made-up one (say "killed by SIGKILL") would pass the very checks a crash test makes.
        case unknown(errno: Int32)
    }

    let processIdentifier: pid_t
    private let condition = NSCondition()
    private var ended: Ending?
    /// Whether a thread is in a blocking `waitpid` for this child (another then waits for it).
    private var isReaping = false

    /// Starts `executable`; its standard streams are the given descriptors, every other descriptor of
    /// this process is closed in the child.
    /// - Throws: `POSIXError` when the child cannot be started (the executable is missing, say).
    init(_ executable: String, _ arguments: [String], environment: [String: String], currentDirectory: String?,
         standardInput: Int32, standardOutput: Int32, standardError: Int32) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        posix_spawn_file_actions_adddup2(&actions, standardOutput, 1)
        posix_spawn_file_actions_adddup2(&actions, standardError, 2)
        if let currentDirectory { Self.addChangeDirectory(&actions, currentDirectory) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals as a fresh process has them: the test process ignores SIGPIPE (ChildProcess), and an
        // ignored signal would stay ignored across the exec.
        var noSignals = sigset_t()
        var allSignals = sigset_t()
        sigemptyset(&noSignals)
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        // The test's store files, pipes and sockets stay its own (a lock held through an inherited
        // descriptor would outlive the test's close).
        #if canImport(Glibc)
        Self.addCloseFrom(&actions, 3)
        #elseif canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EIO) }
        processIdentifier = pid
    }

    deinit {
        // A child never waited for would stay a zombie for the test process's life.
        if isRunning { kill(processIdentifier, SIGKILL) }
        waitUntilExit()
    }

    /// Whether the child has not ended yet (reaped here if it has).
    var isRunning: Bool {
        condition.lock()
        defer { condition.unlock() }
        if ended != nil || isReaping { return ended == nil }
        var status: Int32 = 0
        let reaped = waitpid(processIdentifier, &status, WNOHANG)
        if reaped == processIdentifier {
            ended = Self.ending(status)
        } else if reaped == -1, errno == ECHILD {
            ended = .unknown(errno: ECHILD) // no child of ours any more: it ended, somehow
        }
        return ended == nil
    }

    /// Blocks until the child has ended; how it did.
    var ending: Ending {
        condition.lock()
        while isReaping { condition.wait() }
        if let ended {
            condition.unlock()
            return ended
        }
        isReaping = true
        condition.unlock()
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(processIdentifier, &status, 0) } while reaped == -1 && errno == EINTR
        let failure = errno
        condition.lock()
        defer { condition.unlock() }
        isReaping = false
        let ending = reaped == processIdentifier ? Self.ending(status) : .unknown(errno: failure)
        ended = ending
        condition.broadcast()
        return ending
    }

    func waitUntilExit() {
        _ = ending
    }

    #if canImport(Glibc)
    // glibc has both (2.29 and 2.34) but declares them only for _GNU_SOURCE, which Swift's Glibc module
    // is not built with: looked up by name.
    private typealias FileAction = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias PathAction = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    private static func addCloseFrom(_ actions: inout posix_spawn_file_actions_t, _ lowest: Int32) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            preconditionFailure("glibc 2.34 or later is needed (posix_spawn_file_actions_addclosefrom_np)")
        }
        _ = unsafeBitCast(symbol, to: FileAction.self)(&actions, lowest)
    }

    private static func addChangeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
            preconditionFailure("glibc 2.29 or later is needed (posix_spawn_file_actions_addchdir_np)")
        }
        _ = path.withCString { unsafeBitCast(symbol, to: PathAction.self)(&actions, $0) }
    }
    #elseif canImport(Darwin)
    private static func addChangeDirectory(_ actions: inout posix_spawn_file_actions_t, _ path: String) {
        posix_spawn_file_actions_addchdir_np(&actions, path)
    }
    #endif

    private static func ending(_ status: Int32) -> Ending {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }
}
#endif
