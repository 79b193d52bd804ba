import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Prefix queries beside another process's writes: the index follows them by replay (or by opening
/// the store anew), and the ordered keys that answer prefix queries follow the index. Whether this
/// process shares the writing (`allowsWritersInOtherProcesses`) or only reads (`readOnly`), a key the
/// other process wrote before a query began is listed, in order, and one it removed is not.
@Suite("Prefix queries beside another writer process", .serialized)
struct PrefixListingReplayTests: StepWriterScenario {
    private func expectListing(_ storage: DiskStorage<Data>, _ prefix: String, _ expected: [String], _ context: String) throws {
        #expect(storage.allKeys(withPrefix: prefix) == expected, "\(context)")
        #expect(try storage.objects(withPrefix: prefix).map(\.key) == expected, "\(context)")
    }

    @Test("a shared writer's prefix queries list another writer process's new keys and drop its removed ones",
          arguments: [false, true])
    func sharedWriterFollows(manyChanges: Bool) throws {
        let folder = TemporaryDirectory()
        let storage = try DiskStorage(config: folder.diskConfig(sharedWriters: true), transformer: TransformerFactory.forData())
        for key in ["user.b", "user.d", "caf\u{E9}.1", "other"] { try storage.setObject(value(key, 1), forKey: key) }
        try expectListing(storage, "user.", ["user.b", "user.d"], "before") // the order is built here
        try expectListing(storage, "caf\u{E9}", ["caf\u{E9}.1"], "before")

        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath(), "--shared"], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        #expect(other.ask("set user.c 10") == "wrote user.c 1")
        #expect(other.ask("remove user.b") == "removed user.b")
        #expect(other.ask("set cafe\u{301}.2 10") == "wrote cafe\u{301}.2 2") // NFD, beside an NFC key
        var expectedUsers = ["user.c", "user.d"]
        if manyChanges { // more than the order merges in place: one pass
            for index in 0..<40 {
                let key = "user.n\(index)"
                #expect(other.ask("set \(key) 10") == "wrote \(key) \(index + 3)")
                expectedUsers.append(key)
            }
            expectedUsers.sort()
        }
        try expectListing(storage, "user.", expectedUsers, "after the other process's writes")
        try expectListing(storage, "cafe\u{301}", ["caf\u{E9}.1", "cafe\u{301}.2"], "NFD prefix after")

        #expect(other.ask("clear") == "cleared")
        try expectListing(storage, "", [], "after the other process cleared the store")
        try storage.setObject(value("user.a", 5), forKey: "user.a")
        try expectListing(storage, "user.", ["user.a"], "after this process wrote again")
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }

    @Test("a reader's prefix queries follow the writer process: new keys appear, removed ones go")
    func readerFollows() throws {
        let folder = TemporaryDirectory()
        do {
            let seed = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData())
            for key in ["log.1", "log.3", "x"] { try seed.setObject(value(key, 1), forKey: key) }
        }
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()], input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        var config = folder.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        try expectListing(reader, "log.", ["log.1", "log.3"], "before")
        #expect(other.ask("set log.2 10") == "wrote log.2 1")
        #expect(other.ask("remove log.1") == "removed log.1")
        try expectListing(reader, "log.", ["log.2", "log.3"], "after one write and one removal")
        for index in 0..<30 { #expect(other.ask("set log.m\(index) 10") == "wrote log.m\(index) \(index + 2)") }
        #expect(other.ask("remove log.3") == "removed log.3")
        try expectListing(reader, "log.", (["log.2"] + (0..<30).map { "log.m\($0)" }).sorted(), "after many")
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }
}
