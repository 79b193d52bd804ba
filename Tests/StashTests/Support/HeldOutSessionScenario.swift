import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// What the held-out suites of writers, readers and a full disk share (`ReaderProcessSessionTests`,
/// `FullDiskSessionTests`, `WriterSessionTests`, `OrderOfUseAcrossLayersTests`): values whose length
/// names the write, a history of writes to check readers' answers against, reader processes, and a
/// model of values.
protocol HeldOutSessionScenario: ModelSessionScenario {}

extension HeldOutSessionScenario {
    typealias History = KeyLengthHistory

    /// The value of length `length` written for `key`: it names its key.
    static func value(_ key: String, length: Int) -> Data {
        var data = Data("\(key)#\(length)|".utf8)
        data.append(Data(repeating: UInt8(truncatingIfNeeded: length), count: max(0, length - data.count)))
        return data
    }

    typealias Reader = FollowingReader

    /// A model of values alone (no size limit: eviction plays no part).
    typealias Values = [String: Data]

    /// Checks every key of `keys` and `allKeys` against `model`.
    static func expectAgrees(_ storage: DiskStorage<Data>, _ model: Values, _ keys: [String], _ comment: String) throws {
        #expect(Set(storage.allKeys) == Set(model.keys), "\(comment): allKeys: extra \(Set(storage.allKeys).subtracting(model.keys).sorted().prefix(5)), missing \(Set(model.keys).subtracting(storage.allKeys).sorted().prefix(5))")
        var wrong: [String] = []
        for key in keys {
            let got: Data?
            do { got = try Self.read(storage, key) } catch {
                Issue.record("\(comment): reading \(key) threw \(error)")
                continue
            }
            if got != model[key] { wrong.append("\(key): \(got.map { "\($0.count) bytes" } ?? "missing"), model \(model[key].map { "\($0.count) bytes" } ?? "missing")") }
        }
        #expect(wrong.isEmpty, "\(comment): \(wrong.count) values differ: \(wrong.prefix(5))")
    }

    /// Whether `error` is the file system's "no space" (or "quota"), which a write on a full disk may throw.
    static func isNoSpace(_ error: any Error) -> Bool {
        FileIO.isErrno(error, .ENOSPC) || FileIO.isErrno(error, .EDQUOT)
    }
}

/// What a key held over time: each change's event number and the value's length (nil: none).
/// Every write has a length of its own across all keys, so a length names the write.
struct KeyLengthHistory {
    var event = 0
    var changes: [String: [(event: Int, length: Int?)]] = [:]
    var nextLength = 100
    /// The last event whose call returned (changes are noted before their call, so a read beside it may see them).
    var returned = 0

    /// Notes a write of `key`, returning the new value's length (`big`: 70,000 more, so that the value
    /// has a file of its own; lengths stay apart, the small ones far below 70,000).
    mutating func set(_ key: String, big: Bool = false) -> Int {
        nextLength += 1
        event += 1
        let length = big ? 70_000 + nextLength : nextLength
        changes[key, default: []].append((event, length))
        return length
    }

    /// Notes a removal of `key`.
    mutating func remove(_ key: String) {
        event += 1
        changes[key, default: []].append((event, nil))
    }

    /// Notes a `removeAll`: every key noted so far is gone.
    mutating func removeAll() {
        event += 1
        for key in changes.keys { changes[key]?.append((event, nil)) }
    }

    /// The length `key` held after event `event`.
    func length(_ key: String, at event: Int) -> Int? {
        changes[key]?.last { $0.event <= event }?.length ?? nil
    }

    /// Whether `length` (nil: missing) is an answer a read of `key` that began after event `event`
    /// may give: what the key held then, or anything it held later.
    func allows(_ length: Int?, for key: String, sentAfter event: Int) -> Bool {
        if length == self.length(key, at: event) { return true }
        return changes[key]?.contains { $0.event > event && $0.length == length } ?? false
    }
}

/// A reader process (`StashTorture follow`) and the requests sent to it, each with the event it followed.
final class FollowingReader {
    let child: ChildProcess
    let watchdog: Watchdog
    /// Every read sent, in order (the child answers in order).
    var requests: [(key: String, event: Int)] = []
    let name: String

    /// Starts `StashTorture follow` on the store at `path`; `name` says which reader in messages.
    init(_ tool: URL, _ path: String, name: String) throws {
        child = try ChildProcess(tool, ["follow", path], input: .held)
        watchdog = Watchdog(child, seconds: TestDeadline.long)
        self.name = name
    }

    /// Sends a read of `key`, which begins after event `event` returned.
    func get(_ key: String, after event: Int) {
        requests.append((key, event))
        child.send("get \(key)\n")
    }

    /// Ends the reader and checks each answer against `history`; returns how many were wrong.
    func finish(_ history: KeyLengthHistory, _ comment: String) -> Int {
        child.closeInput()
        let ended = child.wait(upTo: TestDeadline.long)
        watchdog.cancel()
        #expect(ended && child.status == 0, "\(name) \(comment): \(child.ending): \(child.errors)")
        var lines = child.lines().map(String.init)
        #expect(lines.first == "ready", "\(name): \(lines.first ?? "nothing"): \(child.errors)")
        if lines.first == "ready" { lines.removeFirst() }
        #expect(lines.count == requests.count, "\(name): \(lines.count) answers to \(requests.count) reads: \(child.errors)")
        var wrong = 0
        for (line, request) in zip(lines, requests) {
            let words = line.split(separator: " ").map(String.init)
            let length: Int??
            switch (words.first, words.count) {
            case ("got", 3): length = .some(Int(words[2]))
            case ("missing", 2): length = .some(nil)
            default: length = nil
            }
            let good = words.count >= 2 && words[1] == request.key && length.map { history.allows($0, for: request.key, sentAfter: request.event) } == true
            if !good {
                wrong += 1
                if wrong <= 5 {
                    Issue.record("\(name) \(comment): read of \(request.key) sent after event \(request.event) answered \"\(line)\"; the key held \(history.length(request.key, at: request.event).map(String.init) ?? "nothing") then, later \(history.changes[request.key]?.filter { $0.event > request.event }.map { $0.length.map(String.init) ?? "removed" } ?? [])")
                }
            }
        }
        #expect(wrong == 0, "\(name) \(comment): \(wrong) wrong answers of \(lines.count)")
        return wrong
    }
}
