import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sessions that read: a reader process that follows a writer across its sessions, and read sessions
/// that keep no descriptor or mapping of the folder's files.
@Suite("Read sessions: a reader process across writer sessions, no descriptor kept", .serialized)
struct ReadSessionTests: ModelSessionScenario {
    @Test("a reader process follows a writer across its sessions: reads that make uses files ready, compactions, closes and reopens; every answer is a write of its key, the latest once it returned")
    func readerProcessAcrossWriterSessions() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        var random = SeededGenerator(seed: 31)
        let keys = (0..<1200).map { "p\($0)" }
        // Each write's length is its own: the reader's answer names the write.
        var nextLength = 1000
        var lengths: [String: Set<Int>] = [:]
        var current: [String: Int] = [:]
        func write(_ storage: DiskStorage<Data>, _ key: String) throws {
            nextLength += 1 + random.below(3)
            try storage.setObject(Self.value(key, nextLength, size: nextLength), forKey: key)
            lengths[key, default: []].insert(nextLength)
            current[key] = nextLength
        }
        try withEngineThresholds(in: path, compactionMinimum: 64 << 10, directoryMinimum: 1, segmentLimit: 256 << 10,
                                 directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
            do {
                let writer = try openDataStore(path)
                for key in keys { try write(writer, key) }
            }
            let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
            let reader = try ChildProcess(tool, ["follow", path], input: .held)
            let watchdog = Watchdog(reader, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(reader.readLine() == "ready", "\(reader.errors)")
            func ask(_ key: String, exact: Bool, _ comment: String) -> Bool {
                let answer = reader.ask("get \(key)")
                let words = answer.split(separator: " ")
                let length = words.count == 3 && words[0] == "got" ? Int(words[2]) : nil
                let good = exact ? length == current[key] : length.map { lengths[key]?.contains($0) == true } ?? false
                #expect(good, "\(comment): \(key) answered \(answer), latest \(current[key] ?? -1): \(reader.errors)")
                return good
            }
            for session in 0..<6 {
                let writer = try openDataStore(path)
                let readOnlySession = session % 2 == 0
                for step in 0..<30 {
                    if readOnlySession || random.below(3) == 0 {
                        for _ in 0..<120 {
                            let key = keys[random.below(keys.count)]
                            #expect(try Self.read(writer, key).map(\.count) == current[key])
                        }
                    } else if random.below(6) == 0 {
                        try writer.compactNow()
                    } else {
                        let key = keys[random.below(keys.count)]
                        try write(writer, key)
                        guard ask(key, exact: true, "session \(session) step \(step), after the write") else { return }
                    }
                    for _ in 0..<4 {
                        guard ask(keys[random.below(keys.count)], exact: false, "session \(session) step \(step)") else { return }
                    }
                }
            }
            // The writer closed: the reader reads what it left.
            for key in keys.shuffled(using: &random).prefix(200) {
                guard ask(key, exact: true, "after the last close") else { return }
            }
            // A writer opens again and only reads (a uses file made ready and written at close), then another writes.
            do {
                let writer = try openDataStore(path)
                for key in keys { _ = try Self.read(writer, key) }
                _ = writer.entryInfos
            }
            do {
                let writer = try openDataStore(path)
                for key in keys.prefix(20) { try write(writer, key) }
            }
            for key in keys.prefix(40) {
                guard ask(key, exact: true, "after a reading session and a writing one") else { return }
            }
            reader.closeInput()
            #expect(reader.wait(upTo: TestDeadline.long) && reader.status == 0, "\(reader.errors)")
            #expect(Self.strayFiles(path).isEmpty, "\(Self.strayFiles(path))")
        }
    }

    @Test("sessions that only read (a uses file made ready each), with the folder removed under some and compactions in others, keep no descriptor or mapping of the folder's files")
    func readSessionsKeepNoDescriptors() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let keys = (0..<1500).map { "d\($0)" }
        try withEngineThresholds(in: path, directoryMinimum: 1, preparedUsesMinimum: 0) {
            func fill() throws {
                let storage = try openDataStore(path)
                for key in keys { try storage.setObject(Self.value(key, 1, size: 64), forKey: key) }
            }
            try fill()
            BackgroundRelease.finish()
            guard let before = FilesChangedInPlaceTests.openFiles(under: directory.path) else { return }
            var madeReady = 0
            for round in 0..<24 {
                do {
                    let storage = try openDataStore(path)
                    for key in keys.prefix(600) { #expect(try Self.read(storage, key) == Self.value(key, 1, size: 64), "round \(round)") }
                    _ = storage.entryInfos
                    madeReady += storage.engine.sync { $0.usesFilesMadeReady }
                    switch round % 4 {
                    case 1: try FileManager.default.removeItem(atPath: path) // the close writes its uses into a folder gone
                    case 2: try storage.compactNow() // a change: the file made ready goes
                    default: break
                    }
                    // More reads after the change: another file made ready for the compaction's directory.
                    for key in keys.suffix(400) { _ = try Self.read(storage, key) }
                    _ = storage.entryInfos
                }
                if round % 4 == 1 { try fill() }
            }
            #expect(madeReady > 0, "no uses file was made ready")
            // What the stores let go of is released on threads of their own: waited for.
            PreparedUsesFile.finishFills()
            BackgroundRelease.finish()
            let after = FilesChangedInPlaceTests.openFiles(under: directory.path)
            #expect(after.map { $0 == before } ?? false, "before \(before), after \(String(describing: after))")
            #expect(Self.strayFiles(path).isEmpty, "\(Self.strayFiles(path))")
        }
    }
}
