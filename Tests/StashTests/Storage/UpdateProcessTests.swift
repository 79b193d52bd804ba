import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// `update` and `transaction` isolated from writers in other processes (`allowsWritersInOtherProcesses`):
// real processes (`StashTorture increment|move|sum`, Tests/StashTorture/Updates.swift) change one
// store at once. Bounded in count and time.

@Suite("Updates and transactions across processes", .serialized)
struct UpdateProcessTests {
    @Test("two writer processes × 1,000 update increments of one key leave 2,000")
    func incrementsFromTwoProcesses() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let writers = try (0..<2).map { _ in try ChildProcess(try executable("StashTorture"), ["increment", store, "--count", "1000"]) }
        let watchdogs = writers.map { Watchdog($0, seconds: TestDeadline.long) }
        defer { watchdogs.forEach { $0.cancel() } }
        for writer in writers {
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0 && writer.text().contains("done"), "\(writer.errors)")
        }
        let storage = try Storage<Int>(diskConfig: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forCodable(ofType: Int.self))
        #expect(try storage.object(forKey: "n") == 2_000)
    }

    @Test("two writer processes and this one moving amounts between two keys in transactions: a reader process never sees the sum change")
    func transactionsKeepTheSumAcrossProcesses() throws {
        let folder = TemporaryDirectory()
        let store = folder.storePath()
        let torture = try executable("StashTorture")
        let mine = try Storage<Int>(diskConfig: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forCodable(ofType: Int.self))
        try mine.setObjects(["a": 1_000, "b": 1_000])
        let reader = try ChildProcess(torture, ["sum", store, "--total", "2000"], input: .held)
        let readerWatchdog = Watchdog(reader, seconds: TestDeadline.long)
        defer { readerWatchdog.cancel() }
        #expect(reader.waitForOutput(containing: "ready", upTo: TestDeadline.long))
        let writers = try (1...2).map { seed in try ChildProcess(torture, ["move", store, "--count", "1000", "--seed", "\(seed)"]) }
        let watchdogs = writers.map { Watchdog($0, seconds: TestDeadline.long) }
        defer { watchdogs.forEach { $0.cancel() } }
        for round in 0..<300 {
            try mine.transaction { tx in
                try tx.update(forKey: "a") { $0 += round % 5 }
                try tx.update(forKey: "b") { $0 -= round % 5 }
            }
        }
        for writer in writers {
            #expect(writer.wait(upTo: TestDeadline.long) && writer.status == 0, "\(writer.errors)")
        }
        reader.closeInput()
        #expect(reader.wait(upTo: TestDeadline.long) && reader.status == 0, "the reader saw another sum: \(reader.errors)")
        let reads = reader.lines().last.flatMap { $0.split(separator: " ").last.flatMap { Int($0) } } ?? 0
        #expect(reads > 0, "the reader read nothing")
        #expect(try mine.object(forKey: "a") + mine.object(forKey: "b") == 2_000)
        print("transactions across processes: the reader checked \(reads) sums")
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}
