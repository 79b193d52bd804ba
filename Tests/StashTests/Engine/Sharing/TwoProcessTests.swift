import Foundation
import Testing
import Stash
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Contract item 11, across processes, for writers. The model: one writer process at a time. The
// store's folder is locked (flock) while any instance in a process has it open for writing; another
// writer waits up to 100 ms for it, then gets `StorageError.inUse` and touches nothing. These tests
// prove that model with real processes: the refusal is clear, the store is never damaged, every read
// that succeeds returns a value that was written, and the store opens again once the holder is gone.
// Readers in other processes read beside a writer: `ReaderProcessTests.swift`.

@Suite("Two processes on one store", .serialized)
struct TwoProcessTests {
    @Test("a store held by another process is refused with inUse, and opens once that process has ended")
    func heldStoreIsRefusedThenOpens() throws {
        let folder = TemporaryDirectory()
        let holder = try ChildProcess(try executable("StashTorture"), ["hold", folder.storePath()], input: .held)
        try #require(holder.waitForOutput(), "the holder did not start: \(holder.errors)")

        let refusal = storageError { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) }
        guard case .inUse(let directory) = refusal else {
            Issue.record("expected inUse, got \(String(describing: refusal))")
            return
        }
        #expect(directory == folder.storePath())

        holder.closeInput()
        #expect(holder.wait(upTo: TestDeadline.long) && holder.status == 0)
        let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        try storage.setObject(Data("after".utf8), forKey: "k")
        #expect(try storage.object(forKey: "k") == Data("after".utf8))
    }

    @Test("a second writer process is refused (exit 75) while the first writes, and the store stays whole")
    func secondWriterIsRefused() throws {
        let folder = TemporaryDirectory()
        let torture = try executable("StashTorture")
        let first = try ChildProcess(torture, ["write", folder.storePath(), "--seed", "1", "--max-size", "0"])
        try #require(first.waitForOutput(), "the first writer did not start: \(first.errors)")

        let second = try ChildProcess(torture, ["write", folder.storePath(), "--seed", "2", "--max-size", "0"])
        #expect(second.wait(upTo: TestDeadline.long))
        #expect(second.status == 75, "\(second.errors)")
        #expect(second.lines().isEmpty, "the refused writer did something")

        first.kill()
        let storage = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
        for key in storage.allKeys {
            let data = try storage.object(forKey: key)
            #expect(String(decoding: data.prefix(4), as: UTF8.self) == "STV1", "\(key) is not a value the first writer wrote")
        }
    }

    @Test("two stash command loops on one store: every run succeeds or says in use, every read is a written value")
    func twoCommandLoops() throws {
        let directory = TemporaryDirectory()
        let folder = directory.url, store = directory.storePath()
        let stash = try executable("stash")
        let runs = 20
        let results = LoopResults()
        DispatchQueue.concurrentPerform(iterations: 2) { loop in
            let mine = loop == 0 ? "a" : "b", theirs = loop == 0 ? "b" : "a"
            var lastWritten = 0 // the last value of mine whose `set` succeeded
            var lastSeen = 0 // the newest value of theirs read so far: reads never go back in time
            for run in 1...runs {
                let set = results.run(stash, ["--dir", store, "set", mine, "\(mine)-\(run)"], in: folder)
                if set?.status == 0 { lastWritten = run }
                if let get = results.run(stash, ["--dir", store, "get", mine], in: folder), lastWritten > 0 {
                    results.check(get.status == 0 && get.output == "\(mine)-\(lastWritten)", "own read: \(get.status) \(get.output)")
                }
                if let get = results.run(stash, ["--dir", store, "get", theirs], in: folder), get.status == 0 {
                    let value = Int(get.output.dropFirst(2)) ?? -1
                    results.check(get.output.hasPrefix("\(theirs)-") && value >= lastSeen && value <= runs,
                                  "read of \(theirs): \(get.output) after \(lastSeen)")
                    lastSeen = max(lastSeen, value)
                }
            }
        }
        let summary = results.summary
        #expect(summary.failures.isEmpty, "\(summary.failures)")
        #expect(summary.runs == 6 * runs)
        withExtendedLifetime(directory) {}
        print("two processes: \(summary.runs) stash runs in two loops, \(summary.refused) refused as in use, \(summary.failures.count) wrong")
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}

/// What the two command loops saw, shared by both.
private final class LoopResults: @unchecked Sendable {
    // @unchecked Sendable: every field is only touched under `lock`.
    private let lock = NSLock()
    private var runs = 0
    private var refused = 0
    private var failures: [String] = []

    var summary: (runs: Int, refused: Int, failures: [String]) {
        lock.withLock { (runs, refused, failures) }
    }

    /// Runs `stash arguments`; nil if it was refused because the other loop had the store open.
    /// Any other failure is recorded.
    func run(_ stash: URL, _ arguments: [String], in folder: URL) -> (status: Int32, output: String)? {
        do {
            let child = try ChildProcess(stash, arguments)
            let ended = child.wait(upTo: TestDeadline.long)
            let result = (status: child.status, output: child.text()) // `get` prints the raw value, no newline
            lock.withLock {
                runs += 1
                if child.status == 1, child.errors.contains("open in another process") {
                    refused += 1
                } else if !ended || ![0, 3].contains(child.status) {
                    failures.append("\(arguments): \(child.status) \(child.errors)")
                }
            }
            return child.status == 1 ? nil : result
        } catch {
            lock.withLock { failures.append("\(arguments): \(error)") }
            return nil
        }
    }

    func check(_ condition: Bool, _ message: String) {
        if !condition { lock.withLock { failures.append(message) } }
    }
}
