import Foundation
import Stash
import StashTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The processes of `StashTorture soak` (Soak.swift runs them). Each appends one line per event to its
// log file with one `write` (a line in the file is a whole line, also when the process is killed),
// stamped with the system-wide monotonic clock, so the checker (SoakCheck.swift) can order events of
// different processes:
//
//   soak-writer DIR --tag T --seed S --log FILE
//       One of the writers in several processes (`allowsWritersInOtherProcesses`) on keys k0…k15:
//       sets (unique sequence T * 1,000,000,000 + I), removals, reads, and a `removeAll` whenever a
//       line `clear` arrives on stdin. Logs `B set KEY SEQ TIME` before a call and `A SEQ TIME` once it
//       returned (`B remove KEY SEQ TIME`, `B clear - SEQ TIME`; `E SEQ TIME ERROR` when it threw), and
//       each read as `R KEY START END FOUND` (FOUND: the sequence read, `missing`, `torn` or
//       `error:…`). Exits at the end of stdin.
//   soak-reader DIR --seed S --log FILE
//       A read-only process reading random keys, logging `R` lines as above, until killed: one thread
//       through a `DiskStorage`, two more through a `Storage` with memory in front (reads off the
//       queue, memory hits, and memory dropped as the writers change keys). Logs `O TIME` once the
//       store is open.

/// The system-wide monotonic clock, in nanoseconds: comparable between processes of one machine.
func monotonicNanoseconds() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// A log file that a killed process leaves with whole lines only: each line is one `write` in append mode.
final class SoakLog: Sendable {
    private let fd: Int32

    init(_ path: String) {
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard fd >= 0 else { fail("cannot open the log \(path): errno \(errno)", status: 1) }
    }

    deinit { close(fd) }

    func line(_ text: String) {
        let bytes = Array((text + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written != bytes.count { fail("cannot write to the log: errno \(errno)", status: 1) }
    }
}

/// The keys every soak process reads and writes.
enum SoakKeys {
    static let count = 16
    static func random(_ generator: inout SeededGenerator) -> String { "k\(generator.below(count))" }
}

/// Reads `key` and logs it as an `R` line.
func soakRead(_ storage: DiskStorage<Data>, _ key: String, log: SoakLog) {
    soakRead({ try storage.object(forKey: $0) }, key, log: log)
}

/// Reads `key` with `read` and logs it as an `R` line.
func soakRead(_ read: (String) throws -> Data, _ key: String, log: SoakLog) {
    let start = monotonicNanoseconds()
    var found: String
    do {
        let data = try read(key)
        found = TortureValue.sequence(of: data, key: key).map(String.init) ?? "torn"
    } catch StorageError.notFound {
        found = "missing"
    } catch {
        found = "error:" + soakErrorName(error)
    }
    log.line("R \(key) \(start) \(monotonicNanoseconds()) \(found)")
}

/// A short name of an error, without spaces (one field of a log line).
func soakErrorName(_ error: Any) -> String {
    String("\(error)".prefix(80)).map { $0.isWhitespace ? "_" : $0 }.reduce(into: "") { $0.append($1) }
}

func runSoakWriter(_ path: String, tag: UInt64, seed: UInt64, log: SoakLog) throws -> Never {
    let storage = try openStore(path, maxSize: 0, shared: true)
    let clearAsked = Locked(false), ended = Locked(false)
    Thread.detachNewThread {
        while let line = readLine() {
            if line == "clear" { clearAsked.withLock { $0 = true } }
        }
        ended.withLock { $0 = true }
    }
    var random = SeededGenerator(seed: seed)
    var index: UInt64 = 0
    while !ended.withLock({ $0 }) {
        index += 1
        let sequence = tag &* 1_000_000_000 &+ index
        let key = SoakKeys.random(&random)
        let roll = random.below(100)
        let clear = clearAsked.withLock { asked in
            defer { asked = false }
            return asked
        }
        if !clear, roll >= 80 {
            soakRead(storage, key, log: log)
            continue
        }
        let operation: () throws -> Void
        if clear {
            log.line("B clear - \(sequence) \(monotonicNanoseconds())")
            operation = { try storage.removeAll() }
        } else if roll < 70 {
            let size = random.below(200) == 0 ? 300_000 : random.below(2_000)
            let value = TortureValue.make(key: key, sequence: sequence, payloadCount: size)
            log.line("B set \(key) \(sequence) \(monotonicNanoseconds())")
            operation = { try storage.setObject(value, forKey: key) }
        } else {
            log.line("B remove \(key) \(sequence) \(monotonicNanoseconds())")
            operation = { try storage.removeObject(forKey: key) }
        }
        do {
            try operation()
            log.line("A \(sequence) \(monotonicNanoseconds())")
        } catch {
            log.line("E \(sequence) \(monotonicNanoseconds()) \(soakErrorName(error))")
        }
    }
    exit(0)
}

func runSoakReader(_ path: String, seed: UInt64, log: SoakLog) -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), readOnly: true)
    var random = SeededGenerator(seed: seed)
    while true {
        let storage: DiskStorage<Data>
        let hybrid: Storage<Data>
        do {
            storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            hybrid = try Storage(diskConfig: config, transformer: TransformerFactory.forData())
        } catch {
            log.line("X \(monotonicNanoseconds()) \(soakErrorName(error))")
            usleep(50_000) // a writer is setting the store up, or holds it: try again
            continue
        }
        log.line("O \(monotonicNanoseconds())")
        for _ in 0..<2 {
            let threadSeed = random.next()
            Thread.detachNewThread {
                var random = SeededGenerator(seed: threadSeed)
                while true { soakRead({ try hybrid.object(forKey: $0) }, SoakKeys.random(&random), log: log) }
            }
        }
        while true { soakRead(storage, SoakKeys.random(&random), log: log) }
    }
}

/// The `soak-writer` and `soak-reader` commands' arguments.
func soakRole(_ arguments: [String], option: (String) -> String?) throws -> Never {
    guard arguments.count >= 2, let seed = option("--seed").flatMap(UInt64.init), let logPath = option("--log") else {
        fail("usage: StashTorture soak-writer DIR --tag T --seed S --log FILE | soak-reader DIR --seed S --log FILE", status: 2)
    }
    let log = SoakLog(logPath)
    if arguments[0] == "soak-reader" { runSoakReader(arguments[1], seed: seed, log: log) }
    guard let tag = option("--tag").flatMap(UInt64.init), tag > 0, tag < 1 << 30 else { fail("soak-writer needs --tag 1…", status: 2) }
    try runSoakWriter(arguments[1], tag: tag, seed: seed, log: log)
}
