import Foundation
import Testing
@testable import StashRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real `redis-server` on a loopback port of its own, in a fresh temporary folder, without persistence
/// (`--save '' --appendonly no`); killed and its folder removed when the test drops it.
///
/// The port is this object's from init to deinit (``LoopbackPort``), the server running or killed: after
/// ``kill()`` a connection to it is refused, never answered by another test's server that was given the
/// freed port (suites run in parallel), and ``start()`` brings the server back on the port the test's
/// clients know. On Linux `redis-server` binds it beside the socket that holds it, both with `SO_REUSEADDR`.
///
/// `.ci/run` installs Debian's `redis-server`; on a machine without it the suites skip, unless
/// `STASH_REQUIRE_REDIS` is set, which makes its absence a failure.
final class RedisServer: @unchecked Sendable {
    // @unchecked Sendable: `child` is replaced only by start() and kill(), which the test calls from one
    // task; `reservedPort` only by init.
    static let executable: URL? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/opt/homebrew/bin/redis-server"]
        .map(URL.init(fileURLWithPath:)).first { FileManager.default.isExecutableFile(atPath: $0.path) }
    static let isRequired = ProcessInfo.processInfo.environment["STASH_REQUIRE_REDIS"] != nil
    static let isAvailable = executable != nil || isRequired
    static let skipReason: Comment = "redis-server is not installed (apt-get install redis-server); set STASH_REQUIRE_REDIS=1 to make this a failure"

    let folder: URL
    var port: Int { Int(reservedPort.number) }
    private var reservedPort: LoopbackPort
    private let extraArguments: [String]
    private var child: ChildProcess?

    /// Starts a server; `arguments` are added to its command line (say `--requirepass secret`).
    init(_ arguments: [String] = [], name: String = #function) throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("StashRedisTests-\(name.filter(\.isLetter))-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        extraArguments = arguments
        reservedPort = try LoopbackPort()
        // On Darwin nothing holds the port before redis-server binds it, so another process may take it
        // meanwhile; until init returns no client knows the port, so the first start may move to another.
        for attempt in 1...5 {
            do {
                try start()
                return
            } catch ServerError.didNotStart where attempt < 5 {
                reservedPort = try LoopbackPort()
            }
        }
    }

    /// Kills the server; the port is given up after this, once the server is gone.
    deinit {
        kill()
        try? FileManager.default.removeItem(at: folder)
    }

    /// A configuration for this server with short backoff, so failure tests stay quick, and timeouts of
    /// `TestDeadline.long`: a stopped or killed server ends the connection at once on loopback, so no
    /// test needs a timeout to fire unless it sets a short one itself, and on a loaded machine a reply
    /// can take longer than a second without anything being wrong.
    var configuration: RedisConfiguration {
        RedisConfiguration(host: "127.0.0.1", port: port, connectTimeout: TestDeadline.long, commandTimeout: TestDeadline.long,
                           poolSize: 4, initialBackoff: 0.01, maximumBackoff: 0.05)
    }

    /// A client of its own, for looking at the server's state from the side.
    func client() -> RedisClient { RedisClient(configuration: configuration) }

    /// Starts the server (again after ``kill()``, on the same port) and returns once it logs that it
    /// accepts connections.
    /// - Throws: `ServerError.didNotStart` when it does not, `ServerError.notInstalled` without redis-server.
    func start() throws {
        guard let executable = Self.executable else { throw ServerError.notInstalled }
        precondition(child == nil, "start() while the server runs: kill() it first")
        let arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", folder.path,
                         "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""] + extraArguments
        // The runner keeps draining its log, so a chatty server never blocks on a full pipe.
        let child = try ChildProcess(executable, arguments, currentDirectory: folder)
        guard child.waitForOutput(containing: "Ready to accept connections", upTo: TestDeadline.long) else {
            child.kill()
            throw ServerError.didNotStart
        }
        self.child = child
    }

    /// Kills the server with SIGKILL (as a crash would) and waits until it is gone.
    func kill() {
        guard let child else { return }
        self.child = nil
        child.kill()
    }

    /// Freezes the server with SIGSTOP (as a stalled host would): connections stay open, nothing answers.
    func pause() {
        child?.signal(SIGSTOP)
    }

    /// Thaws the server after ``pause()``.
    func resume() {
        child?.signal(SIGCONT)
    }

    /// A number from `INFO stats`, such as `total_connections_received`.
    func stat(_ name: String) throws -> Int {
        let info = try client().send(["INFO", "stats"]).string ?? ""
        let line = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix(name + ":") }
        return line.flatMap { Int($0.dropFirst(name.count + 1)) } ?? -1
    }

    enum ServerError: Error { case notInstalled, didNotStart }
}

/// Calls `body` until it stops throwing, for at most `TestDeadline.long`: for waiting on a server that is
/// coming back (the client's backoff decides when it reconnects, not a sleep in the test).
func eventually<T>(_ body: () throws -> T) throws -> T {
    var result: Result<T, any Error>?
    _ = TestDeadline.poll {
        result = Result { try body() }
        if case .success = result { return true } else { return false }
    }
    return try result!.get()
}
