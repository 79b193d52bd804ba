import Foundation
import Testing
import Stash
@testable import StashTorture // TortureValue: the self-verifying values the child writes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Contract item 6 (crash-consistent disk), proven with real crashes: a `StashTorture` child writes
// self-verifying values of 0–192 KiB in a loop and is killed with SIGKILL, at random moments and, through
// strace, exactly inside journal compaction and inside trimming. After each kill the store is reopened
// and every key checked: it holds a complete value written for it (the last one the child reported,
// or the one in flight) or is not found, never a torn, mixed or foreign value; then it must take writes.
// SIGKILL keeps the page cache, so a write whose `setObject` returned must also be read back.

@Suite("Crash: SIGKILL at random moments, inside compaction and inside trimming", .serialized)
struct CrashTests {
    static let mixedKeys = (0..<8).map { "k\($0)" }
    static let fillLimit = 64 << 10

    @Test("120 kills at random moments: each key reads a value written for it or not-found, and writes work")
    func killsAtRandomMoments() throws {
        let folder = TemporaryDirectory()
        let mixed = folder.storePath("mixed"), fill = folder.storePath("fill")
        var random = SeededGenerator(seed: 20_261_123)
        var known: [String: UInt64] = [:]
        var checked = 0
        for cycle in 1...120 {
            let seed = UInt64(cycle)
            let isFill = cycle % 4 == 0 // one kill in four lands in a store that trims on every write
            let child = try ChildProcess(try torture(), ["write", isFill ? fill : mixed, "--seed", "\(seed)"]
                + (isFill ? ["--fill", "--max-size", "\(Self.fillLimit)"] : ["--max-size", "0"]), errorsIn: folder.url)
            try #require(child.waitForOutput(), "StashTorture stopped: \(child.errors)")
            usleep(UInt32.random(in: 0...30_000, using: &random))
            child.kill()
            try #require(child.wasKilled, "StashTorture ended by itself (\(child.status)): \(child.errors)")
            if isFill {
                checked += try checkFillStore(fill, after: child.lines(), seed: seed).count
            } else {
                checked += try checkMixedStore(mixed, after: child.lines(), seed: seed, known: &known)
            }
        }
        print("crash: 120 kills at random moments, \(checked) values checked")
    }

    @Test("a kill inside journal compaction (before its fsync, before its rename) loses nothing", .enabled(if: Strace.isAvailable),
          arguments: [("fsync", 3), ("?rename,renameat,renameat2", 2), ("?rename,renameat,renameat2", 3)])
    func killInsideCompaction(syscall: String, occurrence: Int) throws {
        // In a new store the first rename and the first two fsyncs (the file's, the folder's) make the
        // journal; every later rename is a compaction's, and so is the third fsync (writes do not fsync).
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let child = try ChildProcess(try strace(), Strace.arguments(killAt: syscall, occurrence: occurrence, command:
            [try torture().path, "write", store, "--seed", "1", "--max-size", "0"]), errorsIn: folder.url)
        try #require(child.wait(upTo: 120), "the child never reached compaction")
        #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
        #expect(FileManager.default.fileExists(atPath: store + "/journal.compacting"), "the kill was not inside compaction")
        let lines = child.lines()
        #expect(lines.count >= 1000, "compaction starts after 1000 journal records")
        var known: [String: UInt64] = [:]
        _ = try checkMixedStore(store, after: lines, seed: 1, known: &known)
        #expect(!FileManager.default.fileExists(atPath: store + "/journal.compacting"))
        print("crash: killed inside compaction at \(syscall.split(separator: ",").first!.trimmingCharacters(in: ["?"])) call #\(occurrence), after \(lines.count) operations")
    }

    @Test("12 kills inside trimming, between journaling evictions and unlinking the files", .enabled(if: Strace.isAvailable))
    func killsInsideTrimming() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        var random = SeededGenerator(seed: 7)
        var orphans = 0
        for cycle in 1...12 {
            // Every unlink of a filling store is an eviction, but the first, which clears a leftover journal.compacting.
            let occurrence = Int.random(in: 2...40, using: &random)
            let child = try ChildProcess(try strace(), Strace.arguments(killAt: "?unlink,unlinkat", occurrence: occurrence, command:
                [try torture().path, "write", store, "--seed", "\(cycle)", "--fill", "--max-size", "\(Self.fillLimit)"]),
                errorsIn: folder.url)
            try #require(child.wait(upTo: 60), "the child never trimmed")
            #expect(child.wasKilled, "not killed: \(child.status) \(child.errors)")
            let files = try valueFiles(in: store)
            let keys = try checkFillStore(store, after: child.lines(), seed: UInt64(cycle))
            // A file the journal says is evicted but that is still there: the kill was inside the trim.
            #expect(files - keys.count > orphans, "the kill was not between an eviction's record and its unlink")
            orphans = try valueFiles(in: store) - open(store, maxSize: Self.fillLimit).allKeys.count
        }
        print("crash: 12 kills inside trimming")
    }

    // MARK: Checks

    /// Checks a store of keys `k0`…`k7` (no size limit) after the child that printed `lines` was killed,
    /// writes to it, and updates `known` to what it holds. Only the operation in flight may differ from
    /// what the child reported.
    /// - Returns: How many values were read and verified.
    private func checkMixedStore(_ path: String, after lines: [Substring], seed: UInt64, known: inout [String: UInt64]) throws -> Int {
        var expected = known
        var last = seed * 1_000_000
        for line in lines {
            let fields = line.split(separator: " ")
            guard fields.count >= 3, let sequence = UInt64(fields[2]) else { Issue.record("bad line \(line)"); continue }
            if fields[0] == "set" { expected[String(fields[1])] = sequence }
            if fields[0] == "remove" { expected[String(fields[1])] = nil }
            last = max(last, sequence)
        }
        let storage = try open(path, maxSize: 0)
        #expect(Set(storage.allKeys).isSubset(of: Self.mixedKeys))
        var actual: [String: UInt64] = [:]
        var deviations: [String] = []
        for key in Self.mixedKeys {
            actual[key] = try verifiedSequence(storage, key)
            if actual[key] != expected[key] {
                deviations.append(key)
                #expect(actual[key] == nil || actual[key] == last + 1,
                        "\(key) holds #\(actual[key] ?? 0), the child reported #\(expected[key] ?? 0) and had #\(last + 1) in flight")
            }
        }
        #expect(deviations.count <= 1, "more than the operation in flight changed: \(deviations)")
        // The store takes writes again.
        let sequence = seed * 1_000_000 + 900_000
        try storage.setObject(TortureValue.make(key: "k0", sequence: sequence, payloadCount: 100), forKey: "k0")
        #expect(try verifiedSequence(storage, "k0") == sequence)
        actual["k0"] = sequence
        known = actual
        return Self.mixedKeys.count
    }

    /// Checks a filling store with a size limit after the child that printed `lines` was killed, and writes to it.
    /// - Returns: The keys it held after reopening.
    private func checkFillStore(_ path: String, after lines: [Substring], seed: UInt64) throws -> [String] {
        let reported = lines.compactMap { $0.split(separator: " ").dropFirst().first.map(String.init) }
        let storage = try open(path, maxSize: Self.fillLimit)
        let keys = storage.allKeys
        for key in keys {
            let sequence = try verifiedSequence(storage, key)
            #expect(sequence.map { "n\($0)" } == key, "\(key) holds #\(sequence ?? 0)")
        }
        if let newest = reported.last { #expect(keys.contains(newest), "\(newest) was written and is gone") }
        let key = "n\(seed * 1_000_000 + 900_000)"
        try storage.setObject(TortureValue.make(key: key, sequence: seed * 1_000_000 + 900_000, payloadCount: 8 << 10), forKey: key)
        #expect(try verifiedSequence(storage, key) != nil)
        #expect(storage.totalSize <= Self.fillLimit)
        return keys
    }

    /// The sequence number of the complete value `key` holds, nil if not found; a torn or foreign value fails the test.
    private func verifiedSequence(_ storage: DiskStorage<Data>, _ key: String) throws -> UInt64? {
        do {
            let data = try storage.object(forKey: key)
            let sequence = TortureValue.sequence(of: data, key: key)
            #expect(sequence != nil, "\(key) holds \(data.count) bytes that are not a complete value written for it")
            return sequence
        } catch StorageError.notFound {
            return nil
        }
    }

    private func open(_ path: String, maxSize: Int) throws -> DiskStorage<Data> {
        let url = URL(fileURLWithPath: path)
        return try DiskStorage(config: DiskConfig(name: url.lastPathComponent, maxSize: maxSize, directory: url.deletingLastPathComponent()),
                               transformer: TransformerFactory.forData())
    }

    private func valueFiles(in path: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: path).filter { !$0.hasPrefix("journal") && $0 != "lock" }.count
    }

    private func torture() throws -> URL {
        try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
    }

    private func strace() throws -> URL {
        try #require(Strace.executable, "strace is needed (STASH_REQUIRE_STRACE is set): apt-get install strace")
    }
}
