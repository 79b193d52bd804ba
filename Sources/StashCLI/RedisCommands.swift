import Foundation
import Stash
import StashRedis

/// `--redis URL [--namespace NAME]`: the commands `get`, `set`, `ls`, `rm` and `stats` on a Redis store
/// (raw bytes per key under `NAME:`), instead of a disk store.
struct RedisOptions {
    var url: String
    var namespace = "stash-cli"

    static let commands: Set<Command> = [.get, .set, .ls, .rm, .stats]
    static let help = """

        Redis (StashRedis; plain TCP, no TLS):
          --redis URL        work on Redis instead of a folder: redis://[user:password@]host[:port][/db]
                             (get, set, ls, rm and stats)
          --namespace NAME   the key prefix on Redis (default: stash-cli), keys are NAME:KEY
        """

    /// Takes `--redis URL` and `--namespace NAME` (either spelling, `--name=value` too) out of
    /// `arguments`, up to a `--`; returns the rest and the options, nil without `--redis`.
    static func extract(from arguments: [String]) throws -> ([String], RedisOptions?) {
        var rest: [String] = []
        var url: String?
        var namespace: String?
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            if argument == "--" {
                rest.append(argument)
                rest += remaining
                break
            }
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            guard name == "--redis" || name == "--namespace" else {
                rest.append(argument)
                continue
            }
            let value: String
            if let equals = argument.firstIndex(of: "=") {
                value = String(argument[argument.index(after: equals)...])
            } else {
                guard let next = remaining.popFirst() else { throw UsageError(message: "\(name) needs a value") }
                value = next
            }
            if name == "--redis" { url = value } else { namespace = value }
        }
        guard let url else {
            if namespace != nil { throw UsageError(message: "--namespace needs --redis URL") }
            return (rest, nil)
        }
        return (rest, RedisOptions(url: url, namespace: namespace ?? "stash-cli"))
    }
}

/// The commands that work on a Redis store, opened as raw bytes, `RedisStorage<Data>`.
@available(watchOS, unavailable) // RedisStorage is (no BSD sockets on a watch)
struct RedisCommands {
    let invocation: Invocation
    let options: RedisOptions
    let storage: RedisStorage<Data>

    init(_ invocation: Invocation, _ options: RedisOptions) throws {
        guard RedisOptions.commands.contains(invocation.command) else {
            throw UsageError(message: "\(invocation.command.rawValue) does not work with --redis (get, set, ls, rm and stats do)")
        }
        if invocation.directory != nil { throw UsageError(message: "--dir and --redis exclude each other") }
        if invocation.durable { throw UsageError(message: "--durable is for disk stores (Redis decides its own persistence)") }
        let configuration: RedisConfiguration
        do {
            configuration = try RedisConfiguration(url: options.url)
        } catch {
            throw UsageError(message: "\(error)")
        }
        self.invocation = invocation
        self.options = options
        storage = try RedisStorage(configuration: configuration, namespace: options.namespace, transformer: TransformerFactory.forData())
    }

    private var key: String { invocation.arguments[0] }

    func run() throws -> Int32 {
        switch invocation.command {
        case .set:
            let value = invocation.arguments.count == 2
                ? Data(invocation.arguments[1].utf8) : (try FileHandle.standardInput.readToEnd() ?? Data())
            try storage.setObject(value, forKey: key, expiry: invocation.ttl.map { .seconds($0) })
        case .get:
            do {
                try FileHandle.standardOutput.write(contentsOf: try storage.object(forKey: key))
            } catch StorageError.notFound {
                writeError("stash: no value for key \(quoted(key)) in \(options.namespace) on \(storage.client.configuration.displayURL)")
                return ExitStatus.notFound
            }
        case .rm: try storage.removeObject(forKey: key)
        case .ls: try list()
        case .stats: try stats()
        default: preconditionFailure("checked in init")
        }
        return ExitStatus.success
    }

    /// Every key (under `ls`'s PREFIX) with its size and expiry, sorted by key, read with one pipeline per 1,000 keys.
    private func entries() throws -> [(key: String, size: Int, expiry: Date?)] {
        // `ls PREFIX`: the keys that start with it, as `allKeys(withPrefix:)` (String.hasPrefix).
        let prefix = invocation.command == .ls ? invocation.arguments.first ?? "" : ""
        let keys = try storage.keys().filter { prefix.isEmpty || $0.hasPrefix(prefix) }.sorted()
        var entries: [(key: String, size: Int, expiry: Date?)] = []
        for start in stride(from: 0, to: keys.count, by: 1_000) {
            let batch = keys[start..<min(keys.count, start + 1_000)]
            let replies = try storage.client.pipeline(batch.flatMap { key -> [[any RESPArgument]] in
                let name = storage.redisKey(key)
                return [["STRLEN", name], ["PEXPIRETIME", name]]
            })
            for (index, key) in batch.enumerated() {
                let milliseconds = replies[index * 2 + 1].integer ?? -1
                entries.append((key, replies[index * 2].integer.flatMap { Int(exactly: $0) } ?? 0,
                                milliseconds > 0 ? Date(timeIntervalSince1970: Double(milliseconds) / 1000) : nil))
            }
        }
        return entries
    }

    private func list() throws {
        let entries = try entries()
        if invocation.json {
            let objects: [[String: Any]] = entries.map { entry in
                var object: [String: Any] = ["key": entry.key, "size": entry.size]
                object["expiry"] = entry.expiry.map(iso8601) ?? NSNull()
                return object
            }
            let data = try JSONSerialization.data(withJSONObject: objects, options: [.prettyPrinted, .sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            for entry in entries {
                print("\(displayKey(entry.key))\t\(entry.size)\t\(entry.expiry.map(iso8601) ?? "never")")
            }
        }
    }

    private func stats() throws {
        let entries = try entries()
        let info = try storage.client.send(["INFO", "server"]).string ?? ""
        let version = info.split(whereSeparator: \.isNewline).first { $0.hasPrefix("redis_version:") }?.dropFirst(14) ?? "?"
        print("server:    \(storage.client.configuration.displayURL) (Redis \(version))")
        print("namespace: \(options.namespace)")
        print("entries:   \(entries.count)")
        print("bytes:     \(entries.reduce(0) { $0 + $1.size })")
    }
}
