import Foundation
import MallocStats

/// `StashBenchmarks --read-all ENGINE FOLDER COUNT`: a process of its own opens ENGINE's store in
/// FOLDER (Stash, LevelDB, LMDB or SQLite, as the engine-at-scale rows fill it), reads every one of
/// its COUNT keys once in a seeded random order, closes it, and prints what opening and reading cost
/// it: `heap <bytes> rss <bytes>` — malloc's bytes in use after the open less before it, and the
/// resident set after the reads less before the open. A process of its own, so the figures hold
/// nothing of the benchmark's other work; and reading leaves Stash's access records behind, as any
/// process that reads does (the rows "… access records present" open after such a process).
enum ReadAllProcess {
    struct Figures {
        var heapGrowth: Int
        var rssGrowth: Int
    }

    static func main(_ arguments: [String]) -> Int32 {
        guard arguments.count == 3, let contender = EngineContender.named(arguments[0]),
              let count = Int(arguments[2]), count > 0 else {
            FileHandle.standardError.write(Data("usage: StashBenchmarks --read-all Stash|LevelDB|LMDB|SQLite FOLDER COUNT\n".utf8))
            return 2
        }
        do {
            // Everything the reads need is built before the first figure is taken.
            let fixture = EngineFixture(count: count)
            let order = fixture.order(seed: 21)
            try warmUp(contender, fixture)
            let heapBefore = stash_bench_malloc_in_use()
            let rssBefore = residentBytes() ?? 0
            var side: (any EngineSide)? = try contender.open(URL(fileURLWithPath: arguments[1]), fixture)
            let heapAfter = stash_bench_malloc_in_use()
            try order.withUnsafeBufferPointer { _ = try side!.batch(.get, $0) }
            let rssAfter = residentBytes() ?? 0
            side = nil
            print("heap \(Int(heapAfter) - Int(heapBefore)) rss \(rssAfter - rssBefore)")
            return 0
        } catch {
            FileHandle.standardError.write(Data("read-all failed: \(error)\n".utf8))
            return 1
        }
    }

    /// The engine opened once on an empty store of its own, one key written and read, then closed:
    /// the code and the one-time set-up (libraries paged in, runtime caches) are then not counted as
    /// the store's memory, which at 100,000 entries would add tens of bytes per entry.
    private static func warmUp(_ contender: EngineContender, _ fixture: EngineFixture) throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("stash-read-all-warm-up-\(getpid())", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let side = try contender.open(folder, fixture)
        try side.set(0, revision: 0)
        consume(try side.get(0))
    }

    /// Runs the read-all process on `engine`'s store in `folder` and returns its figures.
    static func run(_ engine: String, folder: URL, count: Int) throws -> Figures {
        let process = Process()
        process.executableURL = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
        process.arguments = ["--read-all", engine, folder.path, String(count)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let words = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard process.terminationStatus == 0, words.count == 4, let heap = Int(words[1]), let rss = Int(words[3]) else {
            throw BenchError("read-all \(engine) \(folder.path): exit \(process.terminationStatus), output \(words)")
        }
        return Figures(heapGrowth: heap, rssGrowth: rss)
    }

    /// The resident set of this process in bytes (`/proc/self/statm`), nil where there is none.
    static func residentBytes() -> Int? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}

extension EngineContender {
    /// The contender of the engine rows called `name` (`Stash`, `LevelDB`, `LMDB`, `SQLite`).
    static func named(_ name: String) -> EngineContender? {
        ([stash] + peers).first { $0.name == name }
    }
}
