import Foundation
import MallocStats

/// `StashBenchmarks --read-all ENGINE FOLDER COUNT`: a process of its own opens ENGINE's store in
/// FOLDER (Stash, LevelDB, LMDB or SQLite, as the engine-at-scale rows fill it), gets one key, reads
/// every one of its COUNT keys once in a seeded random order, closes it, and prints what that cost it:
/// `heap <bytes> open <bytes> rss <bytes> anon <bytes> close <ns>` — malloc's bytes in use after the
/// open less before it; the resident set after the open and first get, and after the reads, less
/// before the open; the anonymous part of the latter (the resident set without pages of mapped files,
/// which the system drops under pressure and which a `pread` fills in its page cache all the same);
/// and how long the close took. A process of its own, so the figures hold
/// nothing of the benchmark's other work; and reading leaves Stash's access records behind, as any
/// process that reads does (the rows "… access records present" open after such a process).
enum ReadAllProcess {
    struct Figures {
        var heapGrowth: Int
        var rssGrowthOfOpen: Int
        var rssGrowth: Int
        var anonymousGrowth: Int
        var closeNanoseconds: Double
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
            let before = residentBytes() ?? (0, 0)
            var side: (any EngineSide)? = try contender.open(URL(fileURLWithPath: arguments[1]), fixture)
            let heapAfter = stash_bench_malloc_in_use()
            consume(try side!.get(count / 2))
            let afterOpen = residentBytes() ?? (0, 0)
            try order.withUnsafeBufferPointer { _ = try side!.batch(.get, $0) }
            let after = residentBytes() ?? (0, 0)
            let close = Measure.nsPerOp(1) { side = nil }
            print("heap \(Int(heapAfter) - Int(heapBefore)) open \(afterOpen.resident - before.resident) "
                  + "rss \(after.resident - before.resident) anon \(after.anonymous - before.anonymous) close \(Int(close))")
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
        let numbers = words.enumerated().filter { $0.offset % 2 == 1 }.compactMap { Double($0.element) }
        guard process.terminationStatus == 0, words.count == 10, numbers.count == 5 else {
            throw BenchError("read-all \(engine) \(folder.path): exit \(process.terminationStatus), output \(words)")
        }
        return Figures(heapGrowth: Int(numbers[0]), rssGrowthOfOpen: Int(numbers[1]), rssGrowth: Int(numbers[2]),
                       anonymousGrowth: Int(numbers[3]), closeNanoseconds: numbers[4])
    }

    /// The resident set of this process in bytes, and its anonymous part (the resident set less the
    /// pages of files, `/proc/self/statm`'s second and third fields); nil where there is none.
    static func residentBytes() -> (resident: Int, anonymous: Int)? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return nil }
        let fields = statm.split(separator: " ")
        guard fields.count > 2, let pages = Int(fields[1]), let shared = Int(fields[2]) else { return nil }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        return (pages * page, (pages - shared) * page)
    }
}

extension EngineContender {
    /// The contender of the engine rows called `name` (`Stash`, `LevelDB`, `LMDB`, `SQLite`).
    static func named(_ name: String) -> EngineContender? {
        ([stash] + peers).first { $0.name == name }
    }
}
