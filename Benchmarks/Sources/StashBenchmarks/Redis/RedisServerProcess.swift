import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `redis-server` of the benchmark's own, on a free loopback port, without persistence.
final class RedisServerProcess {
    let port: Int
    private let process = Process()
    private let folder: URL

    /// Starts the server; nil (with the reason printed) when `redis-server` is not installed.
    init?(in folder: URL) throws {
        guard let executable = Self.find("redis-server") else {
            print("  redis-server is not installed (apt-get install redis-server): the Redis group is skipped")
            return nil
        }
        self.folder = folder
        port = Self.freePort()
        let log = Pipe()
        process.executableURL = executable
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", folder.path, "--save", "",
                             "--appendonly", "no", "--daemonize", "no", "--logfile", ""]
        process.standardOutput = log
        process.standardError = log
        try process.run()
        var text = ""
        while !text.contains("Ready to accept connections") {
            let chunk = log.fileHandleForReading.availableData
            if chunk.isEmpty { throw BenchError("redis-server did not start: \(text)") }
            text += String(decoding: chunk, as: UTF8.self)
        }
        log.fileHandleForReading.readabilityHandler = { _ = $0.availableData }
    }

    deinit {
        process.terminate()
        process.waitUntilExit()
    }

    static func find(_ name: String) -> URL? {
        ["/usr/bin/", "/usr/local/bin/", "/opt/homebrew/bin/"].map { URL(fileURLWithPath: $0 + name) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// `redis-benchmark`'s requests per second for `tests` (e.g. "get,set") with `clients` connections
    /// and `pipeline` commands in flight per connection, values of `size` bytes; empty without the tool.
    func redisBenchmark(tests: String, clients: Int, pipeline: Int, size: Int, requests: Int) throws -> [String: Double] {
        guard let tool = Self.find("redis-benchmark") else { return [:] }
        let process = Process()
        let output = Pipe()
        process.executableURL = tool
        process.arguments = ["-h", "127.0.0.1", "-p", String(port), "-t", tests, "-c", String(clients), "-P", String(pipeline),
                             "-d", String(size), "-n", String(requests), "--csv"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var rates: [String: Double] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
            if fields.count >= 2, let rate = Double(fields[1]) { rates[fields[0]] = rate }
        }
        return rates
    }

    private static func freePort() -> Int {
        let fd = socket(AF_INET, streamSocketType, 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
