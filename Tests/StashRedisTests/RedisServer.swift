import Foundation
import Testing
@testable import StashRedis
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real `redis-server` on a free loopback port, in a fresh temporary folder, without persistence
/// (`--save '' --appendonly no`); killed and its folder removed when the test drops it.
///
/// `.ci/run` installs Debian's `redis-server`; on a machine without it the suites skip, unless
/// `STASH_REQUIRE_REDIS` is set, which makes its absence a failure.
final class RedisServer: @unchecked Sendable {
    // @unchecked Sendable: `child` is replaced only by start() and kill(), which the test calls from one task.
    static let executable: URL? = ["/usr/bin/redis-server", "/usr/local/bin/redis-server", "/opt/homebrew/bin/redis-server"]
        .map(URL.init(fileURLWithPath:)).first { FileManager.default.isExecutableFile(atPath: $0.path) }
    static let isRequired = ProcessInfo.processInfo.environment["STASH_REQUIRE_REDIS"] != nil
    static let isAvailable = executable != nil || isRequired
    static let skipReason: Comment = "redis-server is not installed (apt-get install redis-server); set STASH_REQUIRE_REDIS=1 to make this a failure"

    let folder: URL
    private(set) var port: Int
    private let extraArguments: [String]
    private var child: ChildProcess?

    /// Starts a server; `arguments` are added to its command line (say `--requirepass secret`).
    init(_ arguments: [String] = [], name: String = #function) throws {
        folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("StashRedisTests-\(name.filter(\.isLetter))-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        extraArguments = arguments
        port = 0
        try start()
    }

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

    /// Starts the server (again, on the same port after ``kill()``; a new free port the first time)
    /// and returns once it logs that it accepts connections.
    func start() throws {
        guard let executable = Self.executable else { throw ServerError.notInstalled }
        for _ in 0..<5 {
            if port == 0 || child != nil { port = Self.freePort() }
            let arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", folder.path,
                             "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""] + extraArguments
            // The runner keeps draining its log, so a chatty server never blocks on a full pipe.
            let child = try ChildProcess(executable, arguments, currentDirectory: folder)
            if child.waitForOutput(containing: "Ready to accept connections", upTo: TestDeadline.long) {
                self.child = child
                return
            }
            child.kill()
            port = 0 // the port was taken meanwhile: try another
        }
        throw ServerError.didNotStart
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

    /// A port nobody listens on now: bound to port 0, the kernel picks one.
    static func freePort() -> Int {
        let fd = socket(AF_INET, streamSocketType, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
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

/// `SOCK_STREAM` as `socket(2)` takes it: an enum on Glibc, an `Int32` on Darwin.
#if canImport(Darwin)
let streamSocketType = SOCK_STREAM
#else
let streamSocketType = Int32(SOCK_STREAM.rawValue)
#endif
