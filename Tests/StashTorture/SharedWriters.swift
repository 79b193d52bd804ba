import Foundation
import Stash
import StashTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// `StashTorture lock-folder DIR` (below) holds the store's lock without letting go.
//
// `StashTorture share DIR --seed N --tag T --private P [--ops COUNT]`: one of several processes writing
// one store at once (`DiskConfig.allowsWritersInOtherProcesses`), for Tests/StashTests/Engine/Sharing/SharedWriterTests.swift.
//
// Runs COUNT seeded random operations (0: until the end of stdin) on the shared keys k0…k15 and on the
// keys P0…P7, which only processes with the same P write (one at a time). Operation I (from 1) writes
// sequence number T * 1,000,000,000 + I, so every value ever written is unique and names its writer.
// Prints one line once each operation returned: `set KEY SEQ`, `remove KEY SEQ`, `get KEY SEQ FOUND`
// (FOUND: the sequence read, or `missing`). A read of a value that is not a complete one written for
// its key, or of a P key other than this process's last write of it, exits with status 3.

func runShare(_ path: String, seed: UInt64, tag: UInt64, privatePrefix: String, operations: Int) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), allowsWritersInOtherProcesses: true)
    let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
    let ended = Locked(false)
    if operations == 0 {
        Thread.detachNewThread {
            _ = try? FileHandle.standardInput.readToEnd()
            ended.withLock { $0 = true }
        }
    }
    var random = SeededGenerator(seed: seed)
    var mine: [String: UInt64] = [:] // this process's last write of each of its own keys
    var index = 0
    while operations == 0 ? !ended.withLock({ $0 }) : index < operations {
        index += 1
        let sequence = tag &* 1_000_000_000 &+ UInt64(index)
        let roll = random.below(100)
        if roll < 70 {
            let key = roll < 45 ? "k\(random.below(16))" : "\(privatePrefix)\(random.below(8))"
            let size = random.below(100) == 0 ? 300_000 : random.below(2_000)
            try storage.setObject(TortureValue.make(key: key, sequence: sequence, payloadCount: size), forKey: key)
            if key.hasPrefix(privatePrefix) { mine[key] = sequence }
            emit("set \(key) \(sequence)")
        } else if roll < 80 {
            let key = "k\(random.below(16))"
            try storage.removeObject(forKey: key)
            emit("remove \(key) \(sequence)")
        } else {
            let key = roll < 92 ? "k\(random.below(16))" : "\(privatePrefix)\(random.below(8))"
            var found = "missing"
            do {
                let data = try storage.object(forKey: key)
                guard let read = TortureValue.sequence(of: data, key: key) else {
                    fail("read \(data.count) bytes for \(key) that are not a complete value of it", status: 3)
                }
                found = String(read)
            } catch StorageError.notFound {}
            if let last = mine[key], found != String(last) {
                fail("read \(key) #\(found), but this process last wrote #\(last) and no other writes it", status: 3)
            }
            emit("get \(key) \(sequence) \(found)")
        }
    }
    exit(0)
}

/// `StashTorture lock-folder DIR`: takes the store folder's lock (`flock`, exclusive) as a writer in
/// several processes does for one operation, prints `locked`, and keeps it until the end of stdin: a
/// holder that does not let go (a stopped process).
func lockFolder(_ path: String) -> Never {
    let fd = open(path, O_RDONLY | O_DIRECTORY)
    guard fd >= 0, flock(fd, LOCK_EX) == 0 else { fail("cannot lock \(path): errno \(errno)", status: 1) }
    emit("locked")
    _ = try? FileHandle.standardInput.readToEnd()
    exit(0)
}

/// The `share` command's arguments.
func share(_ arguments: [String], option: (String) -> String?) throws -> Never {
    guard arguments.count >= 2, let seed = option("--seed").flatMap(UInt64.init), let tag = option("--tag").flatMap(UInt64.init),
          tag < 1 << 30, let prefix = option("--private"), prefix.first?.isLetter == true, prefix.first != "k",
          let operations = Int(option("--ops") ?? "0"), operations >= 0 else {
        fail("usage: StashTorture share DIR --seed N --tag T --private P [--ops COUNT]", status: 2)
    }
    try runShare(arguments[1], seed: seed, tag: tag, privatePrefix: prefix, operations: operations)
}
