import Foundation
import Testing
import Stash
@testable import StashTorture // TortureValue and hexKey: the values and key spelling of `StashTorture attack`

/// Tests of writers in several processes (`DiskConfig.allowsWritersInOtherProcesses`, Contract item 11)
/// whose other process is `StashTorture attack` (Tests/StashTorture/SharedAttack.swift), driven line by
/// line: its self-verifying values of 64 bytes, the last write of each key it logged, and the state a
/// storage opened afresh reads at the end. A suite adopts it and calls `attacker(…)`, `value(…)`…
protocol OtherWriterScenario {}

extension OtherWriterScenario {
    func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }

    /// A self-verifying value of `key` with sequence number `sequence` (as `StashTorture` writes them).
    func value(_ key: String, _ sequence: UInt64, size: Int = 64) -> Data {
        TortureValue.make(key: key, sequence: sequence, payloadCount: size)
    }

    func sequence(_ data: Data?, _ key: String) -> UInt64? {
        data.flatMap { TortureValue.sequence(of: $0, key: key) }
    }

    /// `StashTorture attack` on the test's store, opened (it printed `ready`); under strace when given
    /// its arguments (up to the `--`).
    func attacker(_ folder: TemporaryDirectory, tag: UInt64, extra: [String] = [], strace: [String]? = nil) throws -> OtherWriter {
        let command = [try executable("StashTorture").path, "attack", folder.storePath(), "--tag", "\(tag)"] + extra
        let child: ChildProcess
        if let strace {
            guard let executable = Strace.executable else { throw StraceMissing() }
            child = try ChildProcess(executable, strace + ["--"] + command, input: .held)
        } else {
            child = try ChildProcess(URL(fileURLWithPath: command[0]), Array(command.dropFirst()), input: .held)
        }
        let ready = child.readLine()
        try #require(ready == "ready", "the other writer did not open: \(ready) \(child.errors)")
        return OtherWriter(child: child, watchdog: Watchdog(child, seconds: TestDeadline.long))
    }

    /// The last sequence each key was written with, from `wrote HEX SEQ` lines.
    func lastWrites(_ lines: [Substring]) -> [String: UInt64] {
        var last: [String: UInt64] = [:]
        for line in lines {
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "wrote", let sequence = UInt64(words[2]) else { continue }
            let bytes = stride(from: 0, to: words[1].count, by: 2).compactMap { offset -> UInt8? in
                let start = words[1].index(words[1].startIndex, offsetBy: offset)
                return UInt8(words[1][start..<words[1].index(start, offsetBy: 2)], radix: 16)
            }
            last[String(decoding: bytes, as: UTF8.self)] = sequence
        }
        return last
    }

    /// Every key's sequence in the store, read by a storage opened anew once `storage` is released.
    func finalState(_ folder: TemporaryDirectory, releasing storage: DiskStorage<Data>?) throws -> (sequences: [String: UInt64], wrong: [String]) {
        var storage = storage
        storage = nil
        withExtendedLifetime(storage) {}
        let disk = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        var sequences: [String: UInt64] = [:]
        var wrong: [String] = []
        for key in disk.allKeys {
            if let found = sequence(try? disk.object(forKey: key), key) { sequences[key] = found } else { wrong.append(key) }
        }
        return (sequences, wrong)
    }
}

/// A `StashTorture attack` child (another writer process, driven line by line) with its watchdog.
struct OtherWriter {
    let child: ChildProcess
    let watchdog: Watchdog

    func ask(_ line: String) -> String { child.ask(line) }
    func send(_ text: String) { child.send(text) }
    func readLine() -> String { child.readLine() }
    func closeInput() { child.closeInput() }
    func wait(upTo seconds: TimeInterval) -> Bool { child.wait(upTo: seconds) }
    func waitUntilExit() { child.waitUntilExit() }
    func lines() -> [Substring] { child.lines() }
    var status: Int32 { child.status }
    var errors: String { child.errors }
    var wasKilled: Bool { child.wasKilled }
    func kill() { child.kill() }
    func waitForOutput(containing text: String, upTo seconds: TimeInterval) -> Bool { child.waitForOutput(containing: text, upTo: seconds) }

    /// Ends the child (its input closed; killed if it does not exit) and its watchdog.
    func end() {
        child.closeInput()
        if !child.wait(upTo: TestDeadline.long) { Issue.record("the other writer did not exit: \(child.errors)") }
        watchdog.cancel()
    }
}

/// strace is not installed: the test that needs it cannot run.
struct StraceMissing: Error {}
