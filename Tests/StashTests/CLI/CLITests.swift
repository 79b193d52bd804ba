import Foundation
import Testing
import Stash // the public API only, as the `stash` tool uses it
import StashHTTP // to store an HTTP response as StashHTTP does, for `get`

/// The `stash` executable, run as a separate process on a store in a fresh temporary folder.
/// Values are also written and checked through the library on the same folder (never while a
/// `stash` process has it open: a store is open in one process at a time).
@Suite("stash command-line tool")
struct CLITests {
    @Test("set then get in separate processes round-trips the bytes exactly")
    func setThenGetRoundTrips() throws {
        try withScratchFolder { folder in
            try expectSuccess(stash(["set", "greeting", "hello, wörld"], in: folder))
            var get = try stash(["get", "greeting"], in: folder)
            #expect(get.status == 0)
            #expect(get.stdout == Data("hello, wörld".utf8)) // no newline added

            let binary = Data([0, 0, 0xFF, 0x0A, 0x0D, 0x00, 0x80]) + Data((0...255).map { UInt8($0) })
            try expectSuccess(stash(["set", "binary"], in: folder, input: binary))
            get = try stash(["get", "binary"], in: folder)
            #expect(get.status == 0)
            #expect(get.stdout == binary)

            let text = Data("line one\nline two\n".utf8)
            try expectSuccess(stash(["set", "text"], in: folder, input: text))
            #expect(try stash(["get", "text"], in: folder).stdout == text)

            try expectSuccess(stash(["set", "empty"], in: folder, input: Data()))
            get = try stash(["get", "empty"], in: folder)
            #expect(get.status == 0 && get.stdout.isEmpty)
        }
    }

    @Test("a KEY or VALUE starting with '-' is accepted after --, and --dir may follow the command")
    func dashesAndOptionPlacement() throws {
        try withScratchFolder { folder in
            let store = folder.appendingPathComponent("store").path
            try expectSuccess(stash(["set", "--dir", store, "--", "-key", "-value"], in: folder, addDir: false))
            try expectSuccess(stash(["set", "plain", "value", "--dir", store], in: folder, addDir: false))
            let get = try stash(["get", "--dir=\(store)", "--", "-key"], in: folder, addDir: false)
            #expect(get.status == 0)
            #expect(get.output == "-value")
            #expect(try stash(["--dir", store, "get", "plain"], in: folder, addDir: false).output == "value")
            // After --, even --dir is a KEY or VALUE.
            #expect(try stash(["--dir", store, "get", "--", "--dir"], in: folder, addDir: false).status == 3)
        }
    }

    @Test("without --dir the store is stash-cli in the caches folder")
    func defaultStoreIsInCachesFolder() throws {
        try withScratchFolder { folder in
            try expectSuccess(stash(["set", "k", "v"], in: folder, addDir: false))
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("stash-cli").path))
            #expect(try stash(["get", "k"], in: folder, addDir: false).output == "v")
        }
    }

    @Test("get of a missing key exits 3 with a message on stderr and nothing on stdout")
    func getMissingKeyExits3() throws {
        try withScratchFolder { folder in
            try expectSuccess(stash(["set", "something", "else"], in: folder)) // read commands create no store
            let run = try stash(["get", "nothing-here"], in: folder)
            #expect(run.status == 3)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.contains("no value for key \"nothing-here\""))
        }
    }

    @Test("get of an expired value exits 4, whether the library or --ttl wrote it")
    func getExpiredValueExits4() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data("stale".utf8), forKey: "old", expiry: .date(Date(timeIntervalSinceNow: -10)))
            }
            var run = try stash(["get", "old"], in: folder)
            #expect(run.status == 4)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.contains("expired"))

            try expectSuccess(stash(["set", "now", "gone", "--ttl", "0"], in: folder))
            run = try stash(["get", "now"], in: folder)
            #expect(run.status == 4)
        }
    }

    @Test("set --ttl gives the value an expiry an hour ahead that ls --json reports")
    func ttlSetsExpiry() throws {
        try withScratchFolder { folder in
            let before = Date()
            try expectSuccess(stash(["set", "session", "token", "--ttl", "3600"], in: folder))
            let entries = try listJSON(in: folder)
            let expiry = try #require(entries.first?.expiry)
            let date = try Date(expiry, strategy: .iso8601)
            #expect(date.timeIntervalSince(before) > 3500 && date.timeIntervalSince(before) < 3700)
            #expect(entries.first?.expired == false)
        }
    }

    @Test("ls lists the keys the library wrote, one line per entry, with unusual keys quoted and escaped")
    func lsListsLibraryKeys() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data("12345".utf8), forKey: "plain")
                try storage.setObject(Data("ab".utf8), forKey: "two\nlines")
                try storage.setObject(Data("xyz".utf8), forKey: "ünïcødé 🗝️")
                try storage.setObject(Data(), forKey: "tab\there\u{1B}[31m")
            }
            let run = try stash(["ls"], in: folder)
            #expect(run.status == 0)
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
            #expect(lines.count == 4)
            #expect(lines.contains { $0.hasPrefix("plain ") && $0.contains(" 5  never  ") })
            #expect(lines.contains { $0.hasPrefix("\"two\\nlines\"") && $0.contains(" 2  never  ") })
            #expect(lines.contains { $0.hasPrefix("\"ünïcødé 🗝️\"") && $0.contains(" 3  never  ") })
            #expect(lines.contains { $0.hasPrefix("\"tab\\there\\u{1B}[31m\"") && $0.contains(" 0  never  ") })
            #expect(!run.output.contains("\u{1B}"))
        }
    }

    @Test("ls --json parses as a JSON array with each key's size, expiry and expired flag")
    func lsJSONHasSizes() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data(repeating: 7, count: 1000), forKey: "big")
                try storage.setObject(Data("hi".utf8), forKey: "line\nbreak")
                try storage.setObject(Data("x".utf8), forKey: "old", expiry: .date(Date(timeIntervalSinceNow: -10)))
            }
            let entries = try listJSON(in: folder)
            let byKey = Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0) })
            #expect(Set(byKey.keys) == ["big", "line\nbreak", "old"])
            #expect(byKey["big"]?.size == 1000)
            #expect(byKey["line\nbreak"]?.size == 2)
            #expect(byKey["big"]?.expiry == nil)
            #expect(byKey["big"]?.expired == false)
            #expect(byKey["old"]?.expiry != nil)
            #expect(byKey["old"]?.expired == true)
            for entry in entries {
                _ = try Date(entry.lastAccess, strategy: .iso8601)
            }
        }
    }

    @Test("ls --json escapes every key so that it decodes to the key stored, whatever its characters")
    func lsJSONKeepsHostileKeys() throws {
        let keys: Set<String> = ["quote\"d", "back\\slash", "nul\0byte", "tab\tand\r\u{08}\u{0C}\u{1B}", "sep\u{2028}\u{202E}",
                                 "cafe\u{301}", "emoji 👩‍👩‍👧", "slash/../x", "", " leading space", "{\"json\": [1]}"]
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                for key in keys { try storage.setObject(Data(key.utf8), forKey: key) }
            }
            let entries = try listJSON(in: folder)
            #expect(entries.count == keys.count)
            #expect(Set(entries.map(\.key)) == keys)
            // Every key's spelling is kept byte for byte (NFD stays NFD).
            #expect(Set(entries.map { Array($0.key.utf8) }) == Set(keys.map { Array($0.utf8) }))
            #expect(try stash(["ls", "--json", "nothing-here"], in: folder).output == "[]\n")
        }
    }

    @Test("rm removes one key and leaves the others; removing a missing key is no error")
    func rmRemovesOneKey() throws {
        try withScratchFolder { folder in
            try expectSuccess(stash(["set", "a", "1"], in: folder))
            try expectSuccess(stash(["set", "b", "2"], in: folder))
            try expectSuccess(stash(["rm", "a"], in: folder))
            #expect(try stash(["get", "a"], in: folder).status == 3)
            #expect(try stash(["get", "b"], in: folder).output == "2")
            try expectSuccess(stash(["rm", "never-there"], in: folder))
        }
    }

    @Test("clear removes every value")
    func clearRemovesEverything() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                for key in ["a", "b", "c"] { try storage.setObject(Data(key.utf8), forKey: key) }
            }
            let run = try stash(["clear"], in: folder)
            #expect(run.status == 0)
            #expect(run.output == "removed 3 entries\n")
            #expect(try stash(["ls"], in: folder).output.isEmpty)
            #expect(try stash(["ls", "--json"], in: folder).output == "[]\n")
        }
    }

    @Test("check right after clear of a store of many segments finds nothing superseded left behind")
    func checkAfterClearOfManySegments() throws {
        try withScratchFolder { folder in
            // Many small segments, so that deleting them takes longer than the clear process's own work.
            try withEngineThresholds(in: folder.appendingPathComponent("store").path, segmentLimit: 1 << 10) {
                try withLibraryStore(in: folder) { storage in
                    for index in 0..<2_000 { try storage.setObject(Data(repeating: 7, count: 600), forKey: "k\(index)") }
                }
            }
            try expectSuccess(stash(["clear"], in: folder))
            let check = try stash(["check"], in: folder)
            #expect(check.status == 0, "\(check.stderr)")
            #expect(try StoreFiles(folder.appendingPathComponent("store").path).segments.count <= 2)
        }
    }

    @Test("purge-expired removes only the expired values and says how many")
    func purgeExpiredRemovesOnlyExpired() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data("old".utf8), forKey: "old", expiry: .date(Date(timeIntervalSinceNow: -10)))
                try storage.setObject(Data("fresh".utf8), forKey: "fresh", expiry: .seconds(3600))
                try storage.setObject(Data("forever".utf8), forKey: "forever")
            }
            let run = try stash(["purge-expired"], in: folder)
            #expect(run.status == 0)
            #expect(run.output == "removed 1 expired entry\n")
            #expect(try Set(listJSON(in: folder).map(\.key)) == ["fresh", "forever"])
        }
    }

    @Test("trim --max-size evicts the least recently used values until the store fits")
    func trimEvictsLeastRecentlyUsed() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                for key in ["a", "b", "c"] { try storage.setObject(Data(repeating: 1, count: 100), forKey: key) }
                _ = try storage.object(forKey: "a") // "b" is now the least recently used
            }
            let run = try stash(["trim", "--max-size", "200"], in: folder)
            #expect(run.status == 0)
            #expect(run.output.hasPrefix("removed 1 entry (100 bytes)"))
            #expect(try Set(listJSON(in: folder).map(\.key)) == ["a", "c"])
            try withLibraryStore(in: folder) { storage in
                #expect(storage.totalSize <= 200)
            }
        }
    }

    @Test("stats reports the path, entry count, total bytes and expired count")
    func statsReportsTheStore() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data(repeating: 1, count: 10), forKey: "a")
                try storage.setObject(Data(repeating: 1, count: 5), forKey: "b", expiry: .date(Date(timeIntervalSinceNow: -10)))
            }
            let run = try stash(["stats"], in: folder)
            #expect(run.status == 0)
            let lines = run.output.split(separator: "\n").map(String.init)
            #expect(lines.first?.hasPrefix("path:") == true && lines.first?.hasSuffix("/store") == true)
            #expect(lines.contains("entries:  2"))
            #expect(lines.contains("bytes:    15"))
            #expect(lines.contains("expired:  1"))
        }
    }

    @Test("ls and stats leave out the progress a migration keeps in the store")
    func migrationProgressDoesNotShow() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data("1".utf8), forKey: "n.1")
                var migrator = StorageMigrator<Data>()
                migrator.registerMigration("copy") { $0 }
                try migrator.migrate(storage)
            }
            let list = try stash(["ls"], in: folder)
            #expect(list.status == 0)
            #expect(list.output.split(separator: "\n").map { $0.split(separator: " ").first.map(String.init) } == ["n.1"])
            #expect(try listJSON(in: folder).map(\.key) == ["n.1"])
            #expect(try stash(["stats"], in: folder).output.split(separator: "\n").contains("entries:  1"))
        }
    }

    @Test("stats --json writes one object with the path, counts, bytes and recovery issues")
    func statsAsJSON() throws {
        struct Summary: Decodable { let path: String; let entries: Int; let bytes: Int; let expired: Int; let recoveryIssues: [String] }
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data(repeating: 1, count: 10), forKey: "a")
                try storage.setObject(Data(repeating: 1, count: 5), forKey: "b", expiry: .date(Date(timeIntervalSinceNow: -10)))
            }
            let run = try stash(["stats", "--json"], in: folder)
            #expect(run.status == 0, "\(run.stderr)")
            let summary = try JSONDecoder().decode(Summary.self, from: run.stdout)
            #expect(summary.path.hasSuffix("/store") && summary.entries == 2 && summary.bytes == 15 && summary.expired == 1)
            #expect(summary.recoveryIssues.isEmpty)
        }
    }

    @Test("ls PREFIX lists only the keys that start with it, canonically equivalent spellings included")
    func listByPrefix() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                for key in ["inbox.1", "inbox.2", "inboxes", "archive.1", "cafe\u{301}.menu", "caf\u{E9}.hours", "cafeteria"] {
                    try storage.setObject(Data(key.utf8), forKey: key)
                }
            }
            let inbox = try stash(["ls", "inbox."], in: folder)
            #expect(inbox.status == 0, "\(inbox.stderr)")
            #expect(inbox.output.split(separator: "\n").map { String($0.prefix { $0 != " " }) } == ["inbox.1", "inbox.2"])
            let cafe = try stash(["ls", "--json", "caf\u{E9}"], in: folder)
            let keys = try JSONDecoder().decode([ListedEntry].self, from: cafe.stdout).map(\.key)
            #expect(Set(keys) == ["cafe\u{301}.menu", "caf\u{E9}.hours"])
            #expect(try stash(["ls", "nothing"], in: folder).output.isEmpty)
            #expect(try stash(["ls", "--", "-dash"], in: folder).status == 0)
        }
    }

    @Test("--dir naming the folder that holds stores names them, changes nothing and exits 1",
          arguments: [["ls"], ["stats"], ["get", "k"], ["set", "k", "v"]])
    func dirOfStoresNamesThem(arguments: [String]) throws {
        try withScratchFolder { folder in
            let parent = folder.appendingPathComponent("caches")
            for name in ["Users", "HTTP", "MyApp/Images"] {
                _ = try DiskStorage(config: DiskConfig(name: name, directory: parent), transformer: TransformerFactory.forData())
            }
            try Data("mine".utf8).write(to: parent.appendingPathComponent("notes.txt"))
            let before = try FileManager.default.subpathsOfDirectory(atPath: parent.path).sorted()
            let run = try stash(["--dir", parent.path] + arguments, in: folder, addDir: false)
            #expect(run.status == 1)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.contains("is not a store but the folder that holds stores (3 stores): HTTP, MyApp/Images, Users"), "\(run.stderr)")
            #expect(run.stderr.contains("--dir \(parent.path)/HTTP"))
            #expect(try FileManager.default.subpathsOfDirectory(atPath: parent.path).sorted() == before)

            // A folder of other files only is still "not a Stash store".
            let other = folder.appendingPathComponent("other")
            try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
            try Data("x".utf8).write(to: other.appendingPathComponent("file"))
            let plain = try stash(["--dir", other.path] + arguments, in: folder, addDir: false)
            #expect(plain.status == 1)
            #expect(plain.stderr.contains("is not empty and is not a Stash store"))
        }
    }

    // Contract 7: damage found at open is reported by every command, on stderr; exit statuses stay the command's.
    @Test("damage found when the store is opened is reported on stderr by get, ls and set, with their usual exit status",
          arguments: [["get", "a"], ["ls"], ["set", "b", "v"], ["get", "missing"]])
    func recoveryIssuesOnStderr(arguments: [String]) throws {
        try withScratchFolder { folder in
            try expectSuccess(stash(["set", "a", "x"], in: folder))
            let store = folder.appendingPathComponent("store")
            let segmentName = try #require(try FileManager.default.contentsOfDirectory(atPath: store.path).first { $0.hasSuffix(".segment") })
            let segment = try FileHandle(forWritingTo: store.appendingPathComponent(segmentName))
            try segment.seekToEnd()
            try segment.write(contentsOf: Data([0x10, 0, 0, 0] + Array(repeating: 0xAB, count: 40)))
            try segment.close()

            let run = try stash(arguments, in: folder)
            #expect(run.status == (arguments == ["get", "missing"] ? 3 : 0), "\(run.stderr)")
            #expect(run.stderr.contains("stash: opening the store found damaged data and dropped it (1 issue):"))
            #expect(run.stderr.contains("corrupted"))
            #expect(!String(decoding: run.stdout, as: UTF8.self).contains("damaged"))
            if arguments == ["get", "a"] { #expect(run.stdout == Data("x".utf8)) }
        }
    }

    @Test("a store another process writes: reading commands work, a writing one is refused clearly with exit status 1")
    func storeInUseIsReported() throws {
        try withScratchFolder { folder in
            let storage = try libraryStore(in: folder)
            try storage.setObject(Data("x".utf8), forKey: "live")
            let list = try stash(["ls"], in: folder)
            #expect(list.status == 0, "\(list.stderr)")
            #expect(String(decoding: list.stdout, as: UTF8.self).contains("live"))
            let run = try stash(["set", "k", "v"], in: folder)
            #expect(run.status == 1)
            #expect(run.stdout.isEmpty)
            #expect(run.stderr.hasPrefix("stash: the store at "))
            #expect(run.stderr.contains("open in another process"))
            _ = storage.totalSize // keeps the store open until the runs have finished
        }
    }

    @Test("wrong usage exits 2 with an error and a usage line on stderr and nothing on stdout", arguments: [
        [], ["frob"], ["get"], ["rm"], ["set"], ["get", "a", "b"], ["ls", "a", "b"], ["ls", "--bogus"], ["stats", "extra"],
        ["ls", "--ttl", "5"], ["ls", "--json=yes"], ["set", "k", "v", "--ttl", "soon"], ["set", "k", "--ttl", "-1"],
        ["trim"], ["trim", "--max-size", "lots"], ["trim", "--max-size"], ["get", "-k"], ["set", "k", "v", "--durable=yes"], ["get", "k", "--durable"],
    ])
    func wrongUsageExits2(arguments: [String]) throws {
        try withScratchFolder { folder in
            let run = try stash(arguments, in: folder)
            #expect(run.status == 2)
            #expect(run.stdout.isEmpty)
            let lines = run.stderr.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.count == 3 && lines[2].isEmpty) // two lines, each ending in a newline
            #expect(lines.first?.hasPrefix("stash: ") == true)
            #expect(lines.dropFirst().first?.hasPrefix("usage: stash") == true)
        }
    }

    @Test("--help, -h and help print the usage of every command and option to stdout", arguments: [
        ["--help"], ["-h"], ["help"], ["ls", "--help"],
    ])
    func helpListsEverything(arguments: [String]) throws {
        try withScratchFolder { folder in
            let run = try stash(arguments, in: folder, addDir: false)
            #expect(run.status == 0)
            #expect(run.stderr.isEmpty)
            for word in ["set KEY [VALUE]", "--ttl SECONDS", "--durable", "get KEY", "rm KEY", "ls [PREFIX]", "--json", "stats",
                         "trim --max-size BYTES", "purge-expired", "clear", "tour", "--dir PATH", "--help", "swift run stash"] {
                #expect(run.output.contains(word), "help lacks \(word)")
            }
            #expect(!run.output.contains("main job"))
        }
    }

    @Test("tour exits 0, prints every step and removes its temporary folder")
    func tourRunsEveryStep() throws {
        try withScratchFolder { folder in
            let run = try stash(["tour"], in: folder, addDir: false)
            #expect(run.status == 0)
            #expect(run.stderr.isEmpty)
            let lines = run.output.split(separator: "\n").map(String.init)
            let expected = [
                " 1. opened a Storage<Note> at ",
                " 2. setObject: stored \"groceries\", \"idea\" and \"meeting\" (the last with expiry .seconds(3600))",
                " 3. object(forKey: \"groceries\") -> \"Milk, eggs, coffee\"",
                " 4. allKeys -> groceries, idea, meeting",
                " 5. the clock moves 2 hours ahead, no sleeping",
                " 6. object(forKey: \"meeting\") throws StorageError.expired",
                " 7. entry(forKey: \"meeting\") still returns \"Stand-up at 09:30\" with isExpired == true",
                " 8. async/await: storage.async stored \"later\" and read back \"Read the release notes\"",
                " 9. reopened the store: 4 keys survived",
                "10. transformData(): \"groceries\" is stored as the JSON {",
            ]
            for step in expected {
                #expect(lines.contains { $0.hasPrefix(step) }, "missing step: \(step)")
            }
            let opened = try #require(lines.first { $0.hasPrefix(" 1. opened a Storage<Note> at ") })
            let path = opened.dropFirst(" 1. opened a Storage<Note> at ".count).prefix { $0 != " " }
            #expect(path.hasSuffix("/notes"))
            #expect(lines.last?.contains("`swift run stash set greeting hello`") == true, "\(lines.last ?? "")")
            #expect(!FileManager.default.fileExists(atPath: String(path)))
        }
    }
}

// MARK: - Running `stash`

/// What one run of `stash` did.
private typealias StashRun = ChildProcess.Run

/// One object of `stash ls --json`.
private struct ListedEntry: Decodable {
    let key: String
    let size: Int
    let expiry: String?
    let lastAccess: String
    let expired: Bool
}

/// Runs `stash arguments` (with `--dir <folder>/store` first unless `addDir` is false), with `input`
/// as stdin (else an empty stdin) and `folder` as the caches folder.
private func stash(_ arguments: [String], in folder: URL, input: Data? = nil, addDir: Bool = true) throws -> StashRun {
    let executable = try #require(builtExecutable(named: "stash"), "the stash executable was not built next to the tests")
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_CACHE_HOME"] = folder.path
    let store = folder.appendingPathComponent("store").path
    let run = try ChildProcess.run(executable, (addDir ? ["--dir", store] : []) + arguments, input: input ?? Data(),
                                   environment: environment)
    #expect(run.exitedNormally, "stash was killed by a signal")
    return run
}

private func expectSuccess(_ run: StashRun, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(run.status == 0, "stash failed: \(run.stderr)", sourceLocation: sourceLocation)
}

/// `stash ls --json`, decoded.
private func listJSON(in folder: URL) throws -> [ListedEntry] {
    let run = try stash(["ls", "--json"], in: folder)
    #expect(run.status == 0)
    return try JSONDecoder().decode([ListedEntry].self, from: run.stdout)
}

// MARK: - Folders and the library's view of the store

/// Runs `body` with a fresh, uniquely named temporary folder, removed afterwards.
private func withScratchFolder(_ body: (URL) throws -> Void) throws {
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("StashCLITests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try body(folder)
}

/// The store `stash --dir <folder>/store` uses, opened through the library.
private func libraryStore(in folder: URL) throws -> DiskStorage<Data> {
    try DiskStorage(config: DiskConfig(name: "store", directory: folder), transformer: TransformerFactory.forData())
}

/// Opens the store through the library, runs `body`, and releases it (closing the store) before returning.
private func withLibraryStore(in folder: URL, _ body: (DiskStorage<Data>) throws -> Void) throws {
    try body(libraryStore(in: folder))
}

// MARK: - What a newcomer met: the help footer, get --stale, ls with wide keys, HTTP responses

extension CLITests {
    @Test("the help says stash runs beside a live app and names the setting that shares a store")
    func helpSaysStashRunsBesideAnApp() throws {
        try withScratchFolder { folder in
            let run = try stash(["--help"], in: folder, addDir: false)
            #expect(!run.output.contains("One process at a time"))
            #expect(run.output.contains("allowsWritersInOtherProcesses"))
            #expect(run.output.contains("--stale"))
        }
    }

    @Test("get --stale writes an expired value's bytes with a note on stderr, and exits 0")
    func getStaleWritesExpiredBytes() throws {
        try withScratchFolder { folder in
            try withLibraryStore(in: folder) { storage in
                try storage.setObject(Data("stale bytes".utf8), forKey: "old", expiry: .date(Date(timeIntervalSinceNow: -10)))
                try storage.setObject(Data("fresh".utf8), forKey: "new")
            }
            let refused = try stash(["get", "old"], in: folder)
            #expect(refused.status == 4)
            #expect(refused.stderr.contains("--stale"))
            let stale = try stash(["get", "--stale", "old"], in: folder)
            #expect(stale.status == 0)
            #expect(stale.stdout == Data("stale bytes".utf8))
            #expect(stale.stderr.contains("expired at"))
            let fresh = try stash(["get", "new", "--stale"], in: folder)
            #expect(fresh.status == 0)
            #expect(fresh.stdout == Data("fresh".utf8))
            #expect(fresh.stderr.isEmpty)
            #expect(try stash(["get", "--stale", "missing"], in: folder).status == 3)
            #expect(try stash(["rm", "--stale", "old"], in: folder).status == 2)
        }
    }

    @Test("ls keeps its columns aligned for quoted, wide (CJK, emoji), combining and long keys")
    func lsAlignsEveryKey() throws {
        try withScratchFolder { folder in
            let keys = ["plain", "with space", "日本 語", "日本", "caf\u{E9} x", "cafe\u{301} y", "🍎 apple", "tab\there",
                        String(repeating: "k", count: 50)]
            try withLibraryStore(in: folder) { storage in
                for key in keys { try storage.setObject(Data("v".utf8), forKey: key) }
            }
            let lines = try stash(["ls"], in: folder).output.split(separator: "\n").map(String.init)
            #expect(lines.count == keys.count)
            // The size column ends at the same terminal column on every line but the too-long key's.
            func sizeEnd(_ line: String) -> Int? {
                guard let range = line.range(of: " 1  ") else { return nil }
                // The columns of what comes before: two for the CJK and emoji characters these keys use.
                return line[..<range.lowerBound].reduce(0) { width, character in
                    let value = character.unicodeScalars.first!.value
                    return width + ((0x3000...0x9FFF).contains(value) || (0x1F300...0x1FAFF).contains(value) ? 2 : 1)
                } + 2
            }
            let ends = lines.filter { !$0.hasPrefix("kkkk") }.compactMap(sizeEnd)
            #expect(ends.count == keys.count - 1)
            #expect(Set(ends).count == 1, "\(lines.joined(separator: "\n"))")
            let long = try #require(lines.first { $0.hasPrefix("kkkk") })
            #expect(long.hasPrefix(String(repeating: "k", count: 50) + "  "), "a long key is never joined to its size")
        }
    }

    @Test("get of an HTTP store's response shows the status, headers and body; --raw the stored bytes")
    func getShowsHTTPResponses() throws {
        try withScratchFolder { folder in
            let response = StoredResponse(url: URL(string: "https://api.example.com/todos")!, method: "GET", namespace: "",
                                          statusCode: 200, headers: ["Content-Type": "application/json", "ETag": "\"v1\""],
                                          body: Data(#"[{"title":"Milk"}]"#.utf8),
                                          requestTime: Date(timeIntervalSince1970: 1_800_000_000),
                                          responseTime: Date(timeIntervalSince1970: 1_800_000_001))
            let stored = try StoredResponse.transformer.encode(response)
            try withLibraryStore(in: folder) { storage in try storage.setObject(stored, forKey: "GET https://api.example.com/todos") }
            let run = try stash(["get", "GET https://api.example.com/todos"], in: folder)
            #expect(run.status == 0)
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(lines.first?.hasPrefix("HTTP 200 (GET https://api.example.com/todos, received 2027-01-15T08:00:01Z)") == true,
                    "\(run.output)")
            #expect(lines.contains { $0.lowercased() == "content-type: application/json" })
            #expect(lines.contains { $0.lowercased() == "etag: \"v1\"" })
            #expect(run.output.hasSuffix("\n\n" + #"[{"title":"Milk"}]"#))
            let raw = try stash(["get", "--raw", "GET https://api.example.com/todos"], in: folder)
            #expect(raw.stdout == stored)
        }
    }
}
