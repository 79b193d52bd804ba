import Foundation
import Stash
import Synchronization

/// The small Codable value of the issue: about 200 bytes of JSON.
struct Payload: Codable, Sendable, Equatable {
    var id: Int
    var name: String
    var email: String
    var roles: [String]
    var score: Double
    var verified: Bool
    var bio: String

    static func make(_ id: Int, revision: Int = 0) -> Payload {
        Payload(id: id, name: "User \(id)", email: "user\(id)@example.com", roles: ["reader", "editor"],
                score: Double(id % 1000) / 7 + Double(revision), verified: id % 2 == 0,
                bio: "Revision \(revision). Likes caches that keep their promises, and fast disks.")
    }
}

/// Keys, values and orders shared by Stash and its baselines: same data, same order.
enum Fixtures {
    static let dataSize = 100 * 1024

    /// `user.000042.profile`: 19 bytes, longer than Swift's 15-byte inline strings, like real keys.
    static func key(_ index: Int) -> String {
        let digits = String(index)
        return "user." + String(repeating: "0", count: max(0, 6 - digits.count)) + digits + ".profile"
    }

    /// A key of the same shape that is never stored.
    static func missingKey(_ index: Int) -> String {
        "gone" + key(index).dropFirst(4)
    }

    /// `0..<count` in a random order fixed by `seed`, so every run and every side sees the same one.
    static func shuffled(_ count: Int, seed: UInt64) -> [Int] {
        var generator = SplitMix64(seed: seed)
        return Array(0..<count).shuffled(using: &generator)
    }

    /// 200 random bytes of their own for key `index` in revision `revision` (the engine rows).
    /// Every key gets different bytes: LevelDB compresses its tables (Snappy), and one value
    /// repeated under every key would shrink to nothing on its side.
    static func small(_ index: Int, revision: Int) -> Data {
        var generator = SplitMix64(seed: UInt64(index) &* 4 &+ UInt64(revision) &+ 43)
        var data = Data(count: 200)
        data.withUnsafeMutableBytes { bytes in
            for offset in stride(from: 0, to: 200, by: 8) {
                withUnsafeBytes(of: generator.next()) { word in
                    bytes[offset..<min(offset + 8, 200)].copyBytes(from: word.prefix(min(8, 200 - offset)))
                }
            }
        }
        return data
    }

    /// 100 KB of random bytes; every key stores these (the file system does not care what is in them).
    static let data: Data = {
        var generator = SplitMix64(seed: 42)
        return Data((0..<dataSize).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    }()
}

/// A small, seedable generator (SplitMix64): reproducible orders without Foundation's randomness.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A value shared between threads, behind one lock.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) {
        mutex = Mutex(value)
    }

    func get() -> Value { mutex.withLock { $0 } }
    func set(_ value: Value) { mutex.withLock { $0 = value } }
    func update(_ body: @Sendable (inout Value) -> Void) { mutex.withLock { body(&$0) } }
}

/// One kind of value the scenarios run with: how Stash and the min store encode it, and its values.
struct Kind<T: Sendable>: Sendable {
    var name: String
    var transformer: Transformer<T>
    var codec: Codec<T>
    /// The value written for key `index` in revision `revision` (overwrites use revision 1).
    var value: @Sendable (_ index: Int, _ revision: Int) -> T
    /// A number read out of a value, fed to ``consume(_:)`` so reads are not optimized away.
    var weight: @Sendable (T) -> Int

    static var codable: Kind<Payload> {
        Kind<Payload>(name: "codable", transformer: TransformerFactory.forCodable(ofType: Payload.self),
                      codec: .json(), value: { Payload.make($0, revision: $1) }, weight: { $0.id })
    }

    /// 200 bytes of `Data` per key: the engine rows (no JSON on either side).
    static var small: Kind<Data> {
        Kind<Data>(name: "200 B data", transformer: TransformerFactory.forData(), codec: .identity,
                   value: { Fixtures.small($0, revision: $1) }, weight: { $0.count })
    }

    static var data: Kind<Data> {
        Kind<Data>(name: "100 KB data", transformer: TransformerFactory.forData(), codec: .identity,
                   value: { _, _ in Fixtures.data }, weight: { $0.count })
    }
}

/// Settings from the command line, and sizes for the full and the quick run.
struct Settings {
    var quick = false
    var jsonPath: String?
    var markdownPath: String?
    var filter: String?
    var workDirectory: String?
    /// A folder on tmpfs for the `[tmpfs]` rows (default `/dev/shm`).
    var tmpfsDirectory: String?
    /// `--scale`: the engine rows also at a million entries (minutes; outside CI).
    var scale = false
    /// `--fs`: the file systems every row runs on.
    var fileSystems: [FileSystem.Choice] = [.work, .tmpfs]

    var keyCount: Int { quick ? 2_000 : 10_000 }
    /// Operations per timed batch of disk scenarios: long enough for the clock, short enough for many samples.
    var batch: Int { quick ? 200 : 500 }
    var memoryRounds: Int { quick ? 5 : 15 }
    var coldPasses: Int { quick ? 1 : 2 }
    var existsRounds: Int { quick ? 3 : 10 }
    var durableKeys: Int { quick ? 40 : 200 }
    var asyncBatch: Int { 1_000 }
    var asyncRounds: Int { quick ? 4 : 15 }
    var threadSeconds: Double { quick ? 0.2 : 1.0 }
    var threadRounds: Int { quick ? 2 : 5 }
    var expiredRounds: Int { quick ? 2 : 6 }
    var openCounts: [Int] { quick ? [2_000] : [10_000, 100_000] }
    var openRounds: Int { quick ? 3 : 9 }
    /// Keys of the 100 KB `Data` rows against SQLite (a gigabyte per side at 10,000 keys).
    var largePeerKeys: Int { quick ? 100 : 2_000 }
    /// Durable writes per round (split between the threads) and rounds.
    var durableWrites: Int { quick ? 24 : 200 }
    var durableRounds: Int { quick ? 2 : 5 }
    /// Batches of 100 Codable values per side (`durableBatchRounds` with `DiskConfig.durable`, where
    /// the single writes cost 100 `fsync`s a round).
    var batchRounds: Int { quick ? 8 : 40 }
    var durableBatchRounds: Int { quick ? 3 : 7 }
    /// Writes per process and rounds of the two-writing-processes row (new processes every round).
    var twoWriterWrites: Int { quick ? 100 : 2_000 }
    var twoWriterRounds: Int { quick ? 2 : 9 }
    /// Entries of the engine-at-scale rows (disk per entry, open, index memory, trim, removeAll).
    var engineCounts: [Int] { quick ? [2_000] : scale ? [10_000, 100_000, 1_000_000] : [10_000, 100_000] }

    /// Whether the scenario labelled `label` runs, given `--filter` (a case-insensitive substring).
    func wants(_ label: String) -> Bool {
        guard let filter, !filter.isEmpty else { return true }
        return label.lowercased().contains(filter.lowercased())
    }

    /// Whether any of the rows `<label> vs <peer>` runs: `--filter "vs LevelDB"` selects a peer's rows.
    func wants(_ label: String, peers: [String]) -> Bool {
        peers.contains { wants("\(label) vs \($0)") }
    }
}

/// The run's context: settings, the temporary root folder, and the rows so far.
final class Bench {
    let settings: Settings
    /// Where the stores of the scenarios now running live (one root per file system).
    private(set) var root: URL
    /// `[ext4]`, `[tmpfs]`: appended to every row's scenario, so the file system is in its name.
    private(set) var tag = ""
    private(set) var rows: [Row] = []
    /// The wrapper-overhead table (``WrapperOverheadScenario``): peers from C against from Swift.
    private(set) var wrapperRows: [WrapperRow] = []

    init(settings: Settings, root: URL) {
        self.settings = settings
        self.root = root
    }

    /// The scenarios from now on run under `root`, and their rows say `[<file system>]`.
    func use(root: URL, fileSystem: String) {
        self.root = root
        tag = " [\(fileSystem)]"
    }

    /// An empty folder `name` under the run's root.
    func freshDirectory(_ name: String) throws -> URL {
        let url = root.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Records a row and prints it at once, so a long run shows progress.
    func add(_ row: Row) {
        var row = row
        row.scenario += tag
        rows.append(row)
        let cells = Report.cells(row)
        print("  \(cells[0]): Stash \(cells[1]), \(cells[3]) \(cells[2]), ratio \(cells[4])")
        fflush(nil) // every stream: `stdout` itself is a global Swift 6 will not touch
    }

    /// Records a line of the wrapper-overhead table and prints it.
    func addWrapper(_ row: WrapperRow) {
        var row = row
        row.fileSystem = tag.trimmingCharacters(in: .whitespaces)
        wrapperRows.append(row)
        print("  \(Report.wrapperCells(row).joined(separator: ", "))")
        fflush(nil)
    }
}
