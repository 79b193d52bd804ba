import Foundation
import Stash

// Stash's benchmark suite: every scenario runs Stash and its baseline(s) in this one process, on
// the same keys and values, in interleaved batches, and reports medians and Stash ÷ baseline.
// Usage: StashBenchmarks [--quick | --scale] [--fs both|work|tmpfs] [--json FILE] [--markdown FILE]
//                        [--filter TEXT] [--work-dir DIR] [--tmpfs-dir DIR]
//        StashBenchmarks --fill DIR COUNT [--read]   (a store for `Benchmarks/cli-scale`, through the library; or read it)
//        StashBenchmarks --read-all ENGINE FOLDER COUNT   (the engine-at-scale rows' reading process)
//        StashBenchmarks --store-process reader|writer …  (the multi-process rows' other processes)
// (`Benchmarks/run` builds it in release mode and passes its arguments on).

func parseSettings(_ arguments: [String]) throws -> Settings {
    var settings = Settings()
    var remaining = arguments[...]
    func value(_ option: String) throws -> String {
        guard let value = remaining.popFirst() else { throw BenchError("\(option) needs a value") }
        return value
    }
    while let argument = remaining.popFirst() {
        switch argument {
        case "--quick": settings.quick = true
        case "--scale": settings.scale = true
        case "--fs": settings.fileSystems = try FileSystem.choices(try value(argument))
        case "--json": settings.jsonPath = try value(argument)
        case "--markdown": settings.markdownPath = try value(argument)
        case "--filter": settings.filter = try value(argument)
        case "--work-dir": settings.workDirectory = try value(argument)
        case "--tmpfs-dir": settings.tmpfsDirectory = try value(argument)
        default:
            throw BenchError("""
                unknown argument \(argument)
                usage: StashBenchmarks [--quick | --scale] [--fs both|work|tmpfs] [--json FILE] [--markdown FILE] \
                [--filter TEXT] [--work-dir DIR] [--tmpfs-dir DIR]
                """)
        }
    }
    if settings.quick, settings.scale { throw BenchError("--quick and --scale exclude each other") }
    return settings
}

/// One scenario of a chain: its label (what `--filter` matches) and what it does with the pair.
struct Step<T: Sendable> {
    var label: String
    var run: (Pair<T>, Bench, String) throws -> Void
}

/// Runs `steps` in order on one pair of fresh stores. The first step writes every key; when
/// `--filter` skips it, the keys are written untimed so the later steps find them.
func runChain<T>(_ bench: Bench, _ kind: Kind<T>, keyCount: Int, durable: Bool = false, _ steps: [Step<T>]) throws {
    guard steps.contains(where: { bench.settings.wants($0.label) }) else { return }
    let name = kind.name + (durable ? ", durable" : "")
    print("== \(name): \(keyCount) keys")
    let pair = try Pair(kind, in: try bench.freshDirectory(name.replacingOccurrences(of: " ", with: "-")),
                        keyCount: keyCount, durable: durable)
    defer { pair.close() }
    for (position, step) in steps.enumerated() {
        if bench.settings.wants(step.label) {
            try step.run(pair, bench, step.label)
        } else if position == 0 {
            try pair.populate()
        }
    }
}

func runAll(_ bench: Bench) throws {
    let settings = bench.settings
    let codable = Kind<Payload>.codable
    let data = Kind<Data>.data
    try runChain(bench, codable, keyCount: settings.keyCount, [
        Step(label: "set new key, codable", run: WriteScenarios.setNew),
        Step(label: "overwrite, codable", run: WriteScenarios.overwrite),
        Step(label: "memory hit, codable", run: ReadScenarios.memoryHit),
        Step(label: "async/await memory hit", run: AsyncHitScenario.run),
        Step(label: "async read (memory hit), completion handler", run: ConcurrencyScenarios.completion),
        Step(label: "async read (memory hit), async/await", run: ConcurrencyScenarios.asyncAwait),
        Step(label: "80/20 read/write, 2 threads", run: ConcurrencyScenarios.mixed),
        Step(label: "disk hit, cold memory, codable", run: ReadScenarios.coldDiskHit),
        Step(label: "existsObject, cold memory", run: ReadScenarios.exists),
        Step(label: "removeObject, codable", run: RemoveScenarios.removeObject),
    ])
    try runChain(bench, data, keyCount: settings.keyCount, [
        Step(label: "set new key, 100 KB data", run: WriteScenarios.setNew),
        Step(label: "overwrite, 100 KB data", run: WriteScenarios.overwrite),
        Step(label: "memory hit, 100 KB data", run: ReadScenarios.memoryHit),
        Step(label: "disk hit, cold memory, 100 KB data", run: ReadScenarios.coldDiskHit),
        Step(label: "removeObject, 100 KB data", run: RemoveScenarios.removeObject),
    ])
    try runChain(bench, codable, keyCount: settings.durableKeys, durable: true, [
        Step(label: "set new key, durable, codable", run: WriteScenarios.setNew),
        Step(label: "overwrite, durable, codable", run: WriteScenarios.overwrite),
    ])
    try runChain(bench, data, keyCount: settings.durableKeys, durable: true, [
        Step(label: "set new key, durable, 100 KB data", run: WriteScenarios.setNew),
        Step(label: "overwrite, durable, 100 KB data", run: WriteScenarios.overwrite),
    ])
    let expiredLabel = "removeExpiredObjects, \(settings.keyCount) entries half expired"
    if settings.wants(expiredLabel) {
        print("== removeExpiredObjects")
        try RemoveScenarios.removeExpired(bench: bench, label: expiredLabel)
    }
    try OpenScenarios.run(bench: bench)
    try runPeers(bench)
}

func main() -> Int32 {
    if CommandLine.arguments.dropFirst().first == "--fill" { return CLIFill.main(Array(CommandLine.arguments.dropFirst(2))) }
    if CommandLine.arguments.dropFirst().first == "--read-all" {
        return ReadAllProcess.main(Array(CommandLine.arguments.dropFirst(2)))
    }
    if CommandLine.arguments.dropFirst().first == "--store-process" {
        return StoreProcess.main(Array(CommandLine.arguments.dropFirst(2)))
    }
    let settings: Settings
    do {
        settings = try parseSettings(Array(CommandLine.arguments.dropFirst()).filter { $0 != "--redis" })
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        return 2
    }
    // A folder of our own per file system, removed at the end whatever happens (`run` also removes
    // the work folder's parent).
    let parent = settings.workDirectory.map { URL(fileURLWithPath: $0) } ?? FileManager.default.temporaryDirectory
    let folderName = "stash-benchmarks-\(getpid())"
    var roots: [(url: URL, fileSystem: String)] = []
    for choice in settings.fileSystems {
        switch choice {
        case .work:
            try? FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            roots.append((parent.appendingPathComponent(folderName, isDirectory: true), FileSystem.kind(of: parent.path)))
        case .tmpfs:
            let tmpfs = FileSystem.tmpfsParent(settings.tmpfsDirectory ?? "/dev/shm")
            if let url = tmpfs.url {
                roots.append((url.appendingPathComponent(folderName, isDirectory: true), "tmpfs"))
            } else {
                print("(no tmpfs rows: \(tmpfs.reason))")
            }
        }
    }
    defer { for root in roots { try? FileManager.default.removeItem(at: root.url) } }
    guard let first = roots.first else {
        FileHandle.standardError.write(Data("no file system to measure on\n".utf8))
        return 1
    }
    let bench = Bench(settings: settings, root: first.url)
    print(Report.header(quick: settings.quick, keyCount: settings.keyCount))
    print("file systems: " + roots.map { "\($0.fileSystem) (\($0.url.deletingLastPathComponent().path))" }.joined(separator: ", ")
        + (settings.scale ? "; scale mode: engine rows up to 1,000,000 entries" : ""))
    let started = ContinuousClock.now
    do {
        if CommandLine.arguments.contains("--redis") {
            // `--redis`: the Redis group alone (it needs a redis-server, so it stays out of the default run).
            try RedisScenarios.run(bench)
        } else {
            for root in roots {
                print("\n#### on \(root.fileSystem)")
                bench.use(root: root.url, fileSystem: root.fileSystem)
                try runAll(bench)
            }
        }
    } catch {
        FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
        return 1
    }
    print("\n" + Report.table(bench.rows))
    print("\n" + Report.targetsText(bench.rows))
    print("\n" + Report.issueTargetsText(bench.rows))
    if !bench.wrapperRows.isEmpty { print("\n" + Report.wrapperText(bench.wrapperRows)) }
    let seconds = (ContinuousClock.now - started).nanoseconds / 1e9
    let targets = bench.rows.compactMap(\.met)
    print("\n\(bench.rows.count) rows in \(Int(seconds.rounded())) s; targets: \(targets.filter { $0 }.count) met, "
        + "\(targets.filter { !$0 }.count) missed")
    do {
        if let path = settings.jsonPath { try Report.json(bench.rows).write(to: URL(fileURLWithPath: path)) }
        if let path = settings.markdownPath {
            let markdown = Report.markdown(bench.rows) + "\n" + Report.targetsMarkdown(bench.rows)
                + "\n" + Report.issueTargetsMarkdown(bench.rows)
                + (bench.wrapperRows.isEmpty ? "" : "\n" + Report.wrapperMarkdown(bench.wrapperRows))
            try markdown.write(toFile: path, atomically: true, encoding: .utf8)
        }
    } catch {
        FileHandle.standardError.write(Data("could not write the results: \(error)\n".utf8))
        return 1
    }
    return 0
}

exit(main())
