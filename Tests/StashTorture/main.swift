import Foundation
import Stash
import StashEngine
import StashTestSupport // SeededGenerator (the same seed gives the same run) and writeLine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `StashTorture`: the child process of the crash and multi-process tests (Tests/StashTests/Engine/Recovery/CrashTests.swift).
// A user of the public API only.
//
//   write DIR --seed N [--max-size BYTES] [--keys K] [--fill]
//       Opens `DiskStorage<Data>` on the folder DIR and runs seeded random operations on keys
//       k0..k(K-1) forever: mostly writes of self-verifying values, some removals and reads.
//       With `--fill`, every operation writes a new key `n<SEQ>` of 1–16 KiB instead, so that with
//       a size limit every write trims and every unlink the store makes is an eviction. Prints
//       one line per completed operation: `set KEY SEQ SIZE[ trimmed]`, `remove KEY SEQ`,
//       `get KEY SEQ FOUNDSEQ|missing`. Sequence numbers start after N * 1_000_000, so runs with
//       growing seeds write growing sequence numbers. `trimmed`: the write evicted other keys.
//   snapshot DIR --seed N
//       Writes keys s0…s20499 (small values: enough entries for a key directory at close) and prints
//       `filled FIRSTSEQ COUNT` (key s<i> holds FIRSTSEQ + i), then forever: releases the store (closing
//       writes its key directory), prints `closed`, reopens it and overwrites 50 random keys, printing
//       `set KEY SEQ SIZE` per write, like `write`. With `--reads`, each round reads every key once, in
//       random order, instead, and prints `read`: a process that only read (its close writes a key uses file).
//       Its key directories are written whole at close; with `--kept`, kept as each session goes (a
//       builder from its 32nd write on), and only named at close (and its key uses files written over
//       a file made ready during the reads, then named).
//   increment, move, sum, transact, migrate: read-modify-write and migrations across processes and under kills (Updates.swift).
//   share DIR --seed N --tag T --private P [--ops COUNT]
//       One of several writer processes of one store (SharedWriters.swift says what it does).
//   lock-folder DIR
//       Holds the store folder's lock until the end of stdin (SharedWriters.swift).
//   hold DIR
//       Opens the store, prints `ready`, waits for the end of stdin, exits 0.
//   soak DIR [--seconds N] [--seed S] [--stash PATH], soak-writer …, soak-reader …
//       Two writer processes, a reader process and `stash get` on one store for N seconds under
//       faults, every read checked against the writers' logs (Soak.swift, SoakRoles.swift, SoakCheck.swift).
//   debug-check off-queue|lock-order DIR
//       Debug builds only: breaks a rule the debug checks guard and must trap (DebugChecks.swift).
//   follow DIR
//       Opens the store read-only, prints `ready`, then reads one key per line of stdin (`get KEY`):
//       `got KEY BYTES`, `missing KEY` or `failed KEY` (Follow.swift).
//   step DIR [--shared] [--small-thresholds]
//       Opens the store (with `--shared`, as one of several writer processes; with `--small-thresholds`, with the
//       engine's thresholds lowered as EngineSettings.swift says), prints `ready`, then runs one command per line of stdin and prints a line
//       once it returned: `set KEY SIZE` writes a self-verifying value of SIZE payload bytes with
//       the next sequence number (`wrote KEY SEQ`), `remove KEY` (`removed KEY`), `clear`
//       (`removeAll`: `cleared`). Exits 0 at the end of stdin. For the tests of readers in other
//       processes, which read each write through their own open storage once it is printed.
//
// Every command takes `--pwrite-appends`: its store appends with `pwrite`, not through a mapping.
//
// Exit status: 75 the store is in use by another process, 1 another error, 2 wrong usage,
// 3 a read found a value that is not the one this process last wrote for the key.

/// A value that tells by itself whether it is complete and whose it is (CrashTests has the same format):
/// `STV1`, key length u16, key, sequence u64, payload length u32, payload, checksum u64 (little-endian).
/// The payload is derived from (key, sequence); the checksum covers everything before it.
enum TortureValue {
    static func make(key: String, sequence: UInt64, payloadCount: Int) -> Data {
        var bytes = Array("STV1".utf8)
        append(UInt16(key.utf8.count), to: &bytes)
        bytes += key.utf8
        append(sequence, to: &bytes)
        append(UInt32(payloadCount), to: &bytes)
        bytes += payload(key: key, sequence: sequence, count: payloadCount)
        append(bytes.withUnsafeBytes(checksum), to: &bytes)
        return Data(bytes)
    }

    /// The sequence number of `data` if it is a complete value written for `key`, else nil.
    static func sequence(of data: Data, key: String) -> UInt64? {
        let keyBytes = Array(key.utf8)
        let header = 4 + 2 + keyBytes.count + 8 + 4
        return data.withUnsafeBytes { raw -> UInt64? in
            func read<I: FixedWidthInteger>(_: I.Type, at offset: Int) -> I {
                I(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: I.self))
            }
            guard raw.count >= header + 8, raw.prefix(4).elementsEqual("STV1".utf8),
                  read(UInt16.self, at: 4) == keyBytes.count, raw[6..<(6 + keyBytes.count)].elementsEqual(keyBytes) else { return nil }
            let sequence = read(UInt64.self, at: 6 + keyBytes.count)
            let count = Int(read(UInt32.self, at: 14 + keyBytes.count))
            guard raw.count == header + count + 8,
                  checksum(UnsafeRawBufferPointer(rebasing: raw[0..<(header + count)])) == read(UInt64.self, at: header + count),
                  raw[header..<(header + count)].elementsEqual(payload(key: key, sequence: sequence, count: count))
            else { return nil }
            return sequence
        }
    }

    static func payload(key: String, sequence: UInt64, count: Int) -> [UInt8] {
        var generator = SeededGenerator(seed: Array(key.utf8).withUnsafeBytes(checksum) ^ (sequence &* 0x9E37_79B9_7F4A_7C15))
        let words = (0..<((count + 7) / 8)).map { _ in generator.next().littleEndian }
        return words.withUnsafeBytes { Array($0.prefix(count)) }
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        var offset = 0
        while offset + 8 <= bytes.count {
            hash = (hash ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))) &* 0x100_0000_01B3
            hash ^= hash >> 29
            offset += 8
        }
        for byte in bytes[offset...] { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        return hash ^ UInt64(bytes.count)
    }

    private static func append<I: FixedWidthInteger>(_ value: I, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}

/// One line per completed operation, in one write (``writeLine(_:)``).
func emit(_ line: String) {
    writeLine(line)
}

func fail(_ message: String, status: Int32) -> Never {
    try? FileHandle.standardError.write(contentsOf: Data("StashTorture: \(message)\n".utf8))
    exit(status)
}

func openStore(_ path: String, maxSize: Int, shared: Bool = false) throws -> DiskStorage<Data> {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    return try DiskStorage(config: DiskConfig(name: url.lastPathComponent, maxSize: maxSize, directory: url.deletingLastPathComponent(),
                                              allowsWritersInOtherProcesses: shared),
                           transformer: TransformerFactory.forData())
}

func runWrite(_ path: String, seed: UInt64, maxSize: Int, keys: Int, fill: Bool) throws -> Never {
    let storage = try openStore(path, maxSize: maxSize)
    var random = SeededGenerator(seed: seed)
    var sequence = seed &* 1_000_000
    if fill { try runFill(storage, random: &random, sequence: sequence) }
    var present = Set(storage.allKeys)
    var expected: [String: UInt64] = [:] // this process's last write of a key; 0 = removed by it
    let largest = maxSize > 0 ? min(3 << 16, maxSize / 2) : 3 << 16
    while true {
        sequence += 1
        let key = "k\(Int.random(in: 0..<max(1, keys), using: &random))"
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 75 {
            let size = roll < 8 ? Int.random(in: 0...64, using: &random)
                : roll < 70 ? Int.random(in: 64...(1 << 16), using: &random)
                : Int.random(in: (1 << 16)...max(1 << 16, largest), using: &random)
            try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: size), forKey: key)
            expected[key] = sequence
            present.insert(key)
            let now = Set(storage.allKeys)
            emit("set \(key) \(sequence) \(size)" + (present.isSubset(of: now) ? "" : " trimmed"))
            for evicted in present.subtracting(now) { expected[evicted] = 0 }
            present = now
        } else if roll < 85 {
            try storage.removeObject(forKey: key)
            expected[key] = 0
            present.remove(key)
            emit("remove \(key) \(sequence)")
        } else {
            do {
                let data = try storage.object(forKey: key)
                guard let found = TortureValue.sequence(of: data, key: key) else {
                    fail("read \(data.count) bytes for \(key) that are not a complete value of it", status: 3)
                }
                if let mine = expected[key], mine != found {
                    fail("read \(key) #\(found), but this process last wrote #\(mine) (0 = removed)", status: 3)
                }
                emit("get \(key) \(sequence) \(found)")
            } catch StorageError.notFound {
                if let mine = expected[key], mine != 0 { fail("\(key) #\(mine) is gone without an eviction", status: 3) }
                emit("get \(key) \(sequence) missing")
            }
        }
    }
}

func runFill(_ storage: DiskStorage<Data>, random: inout SeededGenerator, sequence start: UInt64) throws -> Never {
    var sequence = start
    while true {
        sequence += 1
        let key = "n\(sequence)"
        let size = Int.random(in: 1024...(16 << 10), using: &random)
        try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: size), forKey: key)
        emit("set \(key) \(sequence) \(size)")
    }
}

/// Keys enough for the engine to write a key directory when the store closes.
enum SnapshotRun {
    static let keys = 20_500
}

func runSnapshot(_ path: String, seed: UInt64, readsOnly: Bool) throws -> Never {
    var random = SeededGenerator(seed: seed)
    var sequence = seed &* 1_000_000
    do {
        // One line for the whole fill (a line per write would fill the pipe of a parent that only
        // reads after the child ended): key s<i> holds sequence FIRST + i.
        let storage = try openStore(path, maxSize: 0)
        for index in 0..<SnapshotRun.keys {
            try storage.setObject(TortureValue.make(key: "s\(index)", sequence: sequence + 1 + UInt64(index), payloadCount: 16),
                                  forKey: "s\(index)")
        }
        emit("filled \(sequence + 1) \(SnapshotRun.keys)")
        sequence += UInt64(SnapshotRun.keys)
    }
    while true {
        emit("closed")
        let storage = try openStore(path, maxSize: 0)
        if readsOnly {
            for index in (0..<SnapshotRun.keys).shuffled(using: &random) { _ = try storage.object(forKey: "s\(index)") }
            // On the store's queue, after the reads' access records were written there (and, with
            // `--kept`, the uses file made ready, then filled): a store released before then closes at
            // once, and a close does not wait for a fill.
            _ = storage.entryInfos
            PreparedUsesFile.finishFills()
            emit("read")
            continue
        }
        for _ in 0..<50 {
            let key = "s\(Int.random(in: 0..<SnapshotRun.keys, using: &random))"
            sequence += 1
            try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: 16), forKey: key)
            emit("set \(key) \(sequence) 16")
        }
    }
}

/// Durable overwrites of one key, alternating a value kept in a file of its own (odd sequences) and
/// a packed one (even): each replaces the file of the write before it or is replaced by the next.
/// Emits `set big N SIZE` once each write returned; stops after `count` writes.
func runOverwrite(_ path: String, count: Int) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let storage = try DiskStorage(config: DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), durable: true),
                                  transformer: TransformerFactory.forData())
    var sequence = UInt64(storage.allKeys.isEmpty ? 0 : 1_000)
    for _ in 0..<count {
        sequence += 1
        let size = sequence % 2 == 1 ? 300_000 : 100
        try storage.setObject(TortureValue.make(key: "big", sequence: sequence, payloadCount: size), forKey: "big")
        emit("set big \(sequence) \(size)")
    }
    exit(0)
}

/// Batches of eight keys, `b0`…`b7`, each batch writing one sequence number to all of them (one of
/// them, now and then, large enough for a file of its own). Emits `batch N` once each returned.
func runBatches(_ path: String, seed: UInt64) throws -> Never {
    let storage = try openStore(path, maxSize: 0)
    var random = SeededGenerator(seed: seed)
    var sequence = seed &* 1_000_000
    while true {
        sequence += 1
        var batch = StorageBatch<Data>()
        for index in 0..<8 {
            let size = index == 0 && random.below(4) == 0 ? 300_000 : random.below(2_000)
            batch.setObject(TortureValue.make(key: "b\(index)", sequence: sequence, payloadCount: size), forKey: "b\(index)")
        }
        try storage.write(batch)
        writeLine("batch \(sequence)")
    }
}

func runHold(_ path: String) throws -> Never {
    let storage = try openStore(path, maxSize: 0)
    emit("ready")
    _ = try FileHandle.standardInput.readToEnd()
    withExtendedLifetime(storage) {}
    exit(0)
}

func runStep(_ path: String, shared: Bool) throws -> Never {
    try stepUntilEndOfInput(path, shared: shared) // the store closes as its storage goes, as an app's does
    exit(0)
}

private func stepUntilEndOfInput(_ path: String, shared: Bool) throws {
    let storage = try openStore(path, maxSize: 0, shared: shared)
    var sequence: UInt64 = 0
    emit("ready")
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        switch (words.first, words.count) {
        case ("set", 3):
            guard let size = Int(words[2]) else { fail("bad size in \(line)", status: 2) }
            sequence += 1
            try storage.setObject(TortureValue.make(key: words[1], sequence: sequence, payloadCount: size), forKey: words[1])
            emit("wrote \(words[1]) \(sequence)")
        case ("remove", 2):
            try storage.removeObject(forKey: words[1])
            emit("removed \(words[1])")
        case ("clear", 1):
            try storage.removeAll()
            emit("cleared")
        default:
            fail("unknown step \(line)", status: 2)
        }
    }
}

func main(_ arguments: [String]) -> Never {
    func option(_ name: String) -> String? {
        arguments.firstIndex(of: name).flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil }
    }
    let usage = "usage: StashTorture write DIR --seed N [--max-size BYTES] [--keys K] [--fill] | StashTorture snapshot DIR --seed N [--reads] [--kept]"
        + " | StashTorture share DIR --seed N --tag T --private P [--ops COUNT] | StashTorture lock-folder DIR | StashTorture hold DIR | StashTorture step DIR [--shared] [--small-thresholds] | StashTorture follow DIR | StashTorture overwrite DIR --count N | StashTorture batches DIR --seed N"
        + " | StashTorture soak DIR [--seconds N] [--seed S] [--stash PATH] [--without-deletions]"
        + " | StashTorture increment DIR --count N | StashTorture move DIR --count N --seed S | StashTorture sum DIR --total T"
        + " | StashTorture transact DIR --keys K --rounds R | StashTorture migrate DIR"
    guard arguments.count >= 2 else { fail(usage, status: 2) }
    // Any command, with `--pwrite-appends`: the store appends with `pwrite`, not through a mapping of
    // its active segment, for the kill tests that stop a write at its `pwrite`.
    if arguments.contains("--pwrite-appends") { appendWithPwrite(in: arguments[1]) }
    do {
        switch arguments[0] {
        case "write":
            guard let seed = option("--seed").flatMap(UInt64.init), seed < 1 << 40,
                  let maxSize = Int(option("--max-size") ?? "262144"), let keys = Int(option("--keys") ?? "8"), keys > 0
            else { fail(usage, status: 2) }
            try runWrite(arguments[1], seed: seed, maxSize: maxSize, keys: keys, fill: arguments.contains("--fill"))
        case "snapshot":
            guard let seed = option("--seed").flatMap(UInt64.init), seed < 1 << 40 else { fail(usage, status: 2) }
            writeDirectories(in: arguments[1], kept: arguments.contains("--kept"))
            try runSnapshot(arguments[1], seed: seed, readsOnly: arguments.contains("--reads"))
        case "hold":
            try runHold(arguments[1])
        case "step":
            if arguments.contains("--small-thresholds") { lowerThresholds(in: arguments[1]) }
            try runStep(arguments[1], shared: arguments.contains("--shared"))
        case "follow":
            try runFollow(arguments[1])
        case "batches":
            guard let seed = option("--seed").flatMap(UInt64.init), seed < 1 << 40 else { fail(usage, status: 2) }
            try runBatches(arguments[1], seed: seed)
        case "share":
            try share(arguments, option: option)
        case "soak":
            try soak(arguments, option: option)
        case "soak-writer", "soak-reader":
            try soakRole(arguments, option: option)
        case "lock-folder":
            lockFolder(arguments[1])
        case "attack":
            try runAttack(arguments, option: option)
        #if DEBUG
        case "compact-steps":
            try CompactionStepChild.run(arguments, option: option)
        case "debug-check":
            guard arguments.count == 3 else { fail(usage, status: 2) }
            try runDebugCheck(arguments[1], arguments[2])
        #endif
        case "increment":
            guard let count = option("--count").flatMap(Int.init) else { fail(usage, status: 2) }
            try runIncrement(arguments[1], count: count)
        case "move":
            guard let count = option("--count").flatMap(Int.init), let seed = option("--seed").flatMap(UInt64.init) else { fail(usage, status: 2) }
            try runMove(arguments[1], count: count, seed: seed)
        case "sum":
            guard let total = option("--total").flatMap(Int.init) else { fail(usage, status: 2) }
            try runSum(arguments[1], total: total)
        case "transact":
            guard let keys = option("--keys").flatMap(Int.init), keys > 0, let rounds = option("--rounds").flatMap(Int.init) else { fail(usage, status: 2) }
            try runTransact(arguments[1], keys: keys, rounds: rounds)
        case "migrate":
            try runMigrate(arguments[1])
        case "overwrite":
            guard let count = option("--count").flatMap(Int.init), count > 0 else { fail(usage, status: 2) }
            try runOverwrite(arguments[1], count: count)
        default:
            fail(usage, status: 2)
        }
    } catch StorageError.inUse(let directory) {
        fail("the store at \(directory) is in use by another process", status: 75)
    } catch {
        fail("\(error)", status: 1)
    }
}

main(Array(CommandLine.arguments.dropFirst()))
