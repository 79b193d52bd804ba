import Foundation
import Testing

/// `stash --redis URL [--namespace NAME]`, run as the built `stash` executable.
@Suite("stash --redis", .enabled(if: RedisServer.isAvailable, RedisServer.skipReason))
struct RedisCLITests {
    /// Runs `stash` with `arguments` (and `input` on stdin); returns exit status, stdout and stderr.
    private func stash(_ arguments: [String], input: Data = Data()) throws -> (status: Int32, out: String, err: String) {
        let executable = try #require(builtExecutable(named: "stash"), "stash was not built next to the tests")
        let run = try ChildProcess.run(executable, arguments, input: input)
        return (run.status, run.output, run.stderr)
    }

    @Test("set, get, ls, stats and rm work on a Redis namespace")
    func commands() throws {
        let server = try RedisServer()
        let url = "redis://127.0.0.1:\(server.port)/0"
        #expect(try stash(["--redis", url, "set", "greeting", "hello"]).status == 0)
        #expect(try stash(["set", "--redis=\(url)", "--namespace", "other", "greeting", "--ttl", "60"], input: Data("bytes\n".utf8)).status == 0)
        #expect(try stash(["--redis", url, "get", "greeting"]).out == "hello")
        #expect(try stash(["--redis", url, "--namespace", "other", "get", "greeting"]).out == "bytes\n")
        #expect(try server.client().send(["GET", "stash-cli:greeting"]).string == "hello")
        let listing = try stash(["--redis", url, "--namespace", "other", "ls"]).out
        #expect(listing.hasPrefix("greeting\t6\t"))
        #expect(!listing.contains("never"), "the ttl shows as an expiry date")
        let json = try stash(["--redis", url, "ls", "--json"]).out
        #expect(json.contains("\"key\" : \"greeting\"") && json.contains("\"expiry\" : null"))
        let stats = try stash(["--redis", url, "stats"]).out
        #expect(stats.contains("namespace: stash-cli") && stats.contains("entries:   1") && stats.contains("bytes:     5"))
        #expect(try stash(["--redis", url, "rm", "greeting"]).status == 0)
        let missing = try stash(["--redis", url, "get", "greeting"])
        #expect(missing.status == 3 && missing.err.contains("no value for key"))
        #expect(try stash(["--redis", url, "--namespace", "other", "get", "greeting"]).status == 0, "another namespace is untouched")
    }

    @Test("wrong usage and an unreachable server are clear errors, not hangs")
    func errors() throws {
        let server = try RedisServer()
        let url = "redis://127.0.0.1:\(server.port)"
        #expect(try stash(["--redis", url, "clear"]).status == 2)
        #expect(try stash(["--redis", url, "--dir", "/tmp/x", "get", "k"]).status == 2)
        #expect(try stash(["--namespace", "x", "get", "k"]).status == 2)
        #expect(try stash(["--redis", "rediss://127.0.0.1", "get", "k"]).status == 2)
        server.kill()
        let down = try stash(["--redis", url, "get", "k"])
        #expect(down.status == 1)
        #expect(down.err.contains("cannot connect"))
    }
}
