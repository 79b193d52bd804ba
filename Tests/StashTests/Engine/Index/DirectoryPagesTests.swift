import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The key directory read a page at a time (Docs/Format.md, "Key directory"): an open reads the header,
/// the page table and the segment list, a lookup the pages it needs, and the queue's first operation the
/// rest; a page changed in place before its first read fails its check, and the store replays its
/// segments instead: no answer changes, nothing is lost, and the damage is reported.
@Suite("Key directory pages read when first used")
struct DirectoryPagesTests {
    static let count = 20_000

    static func payload(_ index: Int, _ round: Int) -> Data { Data("value \(index) of round \(round)".utf8) }

    static func directoryPath(_ path: String) -> String { path + "/" + StoreFolder.directoryName }
    static func usesPath(_ path: String) -> String { path + "/" + StoreFolder.usesName }

    /// A store of ``count`` keys whose key directory was written at close.
    static func makeStore(_ path: String) throws {
        let storage = try openDataStore(path)
        try storage.setObjects(Dictionary(uniqueKeysWithValues: (0..<count).map { ("key \($0)", payload($0, 0)) }))
    }

    /// Runs `body` with the path of a new store of ``count`` keys whose key directory was written at close.
    static func withStore(_ body: (String) throws -> Void) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            try makeStore(path)
            try body(path)
        }
    }

    /// Records an issue for each key `storage` does not read back as written at first.
    static func expectEveryKey(_ storage: DiskStorage<Data>, _ context: String) {
        for index in 0..<count where (try? storage.object(forKey: "key \(index)")) != payload(index, 0) {
            Issue.record("key \(index) wrong \(context)")
        }
    }

    /// Whether the store's directory still has pages to read, and how many it read.
    static func pages(_ storage: DiskStorage<Data>) -> (partial: Bool, read: Int?) {
        storage.engine.store.withIndex { ($0.base?.isPartial ?? false, $0.base?.pagesRead) }
    }

    static func reports(_ storage: DiskStorage<Data>) -> Int {
        storage.engine.store.recoveryIssues.filter { "\($0)".contains("changed on disk") }.count
    }

    /// Flips one byte in every page of the directory file at `path` but the first (the body's and the uses'), in place.
    static func flipEveryPage(ofDirectory path: String) throws {
        let bytes = try Damage.bytes(path)
        let header = try #require(bytes.withUnsafeBytes { DirectoryFormat.parse($0) })
        // Not the first, which holds the segment list: an open reads it, and would refuse the directory at once.
        for offset in stride(from: DirectoryFormat.headerLength + DirectoryFormat.pageLength + 100, to: header.usesEnd, by: DirectoryFormat.pageLength) {
            try Damage.flip(path, at: offset)
        }
    }

    @Test("an open reads the header, the page table and the pages its lookups need; the first operation on the queue reads the rest")
    func openReadsPagesAsNeeded() throws {
        try Self.withStore { path in
            let storage = try openDataStore(path)
            let opened = Self.pages(storage)
            #expect(opened.partial)
            let total = DirectoryFormat.pageCount(try Damage.size(Self.directoryPath(path)))
            #expect(try #require(opened.read) <= 2, "an open read more than the segment list: \(opened.read ?? 0) of \(total) pages")
            #expect(try storage.object(forKey: "key 7") == Self.payload(7, 0))
            let afterGet = Self.pages(storage)
            #expect(afterGet.partial)
            #expect(try #require(afterGet.read) <= 8, "a lookup read \(afterGet.read ?? 0) of \(total) pages")
            try storage.setObject(Self.payload(8, 1), forKey: "key 8")
            #expect(Self.pages(storage) == (false, nil), "the first operation on the queue left pages unread")
            for index in stride(from: 0, to: Self.count, by: 7) {
                #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, index == 8 ? 1 : 0))
            }
            #expect(Self.reports(storage) == 0)
        }
    }

    @Test("the rest is read a step at a time (the queue's first operation takes a MiB per hold of the index's lock): no step reads more pages than its limit, and the steps end with every page read")
    func restReadInSteps() throws {
        try Self.withStore { path in
            let storage = try openDataStore(path)
            var (steps, read) = (0, Self.pages(storage).read ?? 0)
            while Self.pages(storage).partial, steps < 1_000 {
                #expect(storage.engine.store.withIndex { $0.base?.loadAll(limit: 5) } == true)
                if let now = Self.pages(storage).read {
                    #expect(now > read && now - read <= 5, "a step read \(now - read) pages")
                    read = now
                }
                steps += 1
            }
            #expect(Self.pages(storage) == (false, nil) && steps > 2, "\(steps) steps")
            Self.expectEveryKey(storage, "after the steps")
            #expect(Self.reports(storage) == 0)
        }
    }

    @Test("readers on four threads load pages while a write on the queue reads the rest: every answer right")
    func readersLoadPagesBesideFirstWrite() throws {
        try Self.withStore { path in
            let storage = try openDataStore(path)
            let wrong = Locked(0)
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for step in 0..<Self.count / 4 {
                    let index = (step * 4 + thread) * 7_919 % Self.count // every key once across the threads, in a scattered order
                    if thread == 0, step == Self.count / 16 { try? storage.setObject(Self.payload(0, 1), forKey: "extra") }
                    if (try? storage.object(forKey: "key \(index)")) != Self.payload(index, 0) { wrong.withLock { $0 += 1 } }
                }
            }
            #expect(wrong.withLock { $0 } == 0)
            #expect(Self.pages(storage) == (false, nil))
            #expect(try storage.object(forKey: "extra") == Self.payload(0, 1))
        }
    }

    /// What the store does first once the directory's pages are flipped in place.
    enum FirstCall: String, CaseIterable {
        /// Reads off the queue, which find a failed page and go to the queue.
        case reads
        /// A write, whose operation on the queue reads the rest first.
        case write
        /// A listing of every key (an operation on the queue).
        case listing
    }

    @Test("pages changed in place before their first read: every answer stays right, the damage is reported once, the next open replays nothing lost",
          arguments: FirstCall.allCases)
    func pagesChangedBeforeFirstRead(first: FirstCall) throws {
        try Self.withStore { path in
            do {
                let storage = try openDataStore(path)
                #expect(try storage.object(forKey: "key 1") == Self.payload(1, 0))
                try Self.flipEveryPage(ofDirectory: Self.directoryPath(path))
                switch first {
                case .reads: #expect(try storage.object(forKey: "key 19999") == Self.payload(19_999, 0))
                case .write: try storage.setObject(Self.payload(3, 1), forKey: "key 3")
                case .listing: #expect(storage.allKeys.count == Self.count)
                }
                try storage.removeObject(forKey: "key 4")
                for index in 0..<Self.count where index != 4 {
                    let expected = Self.payload(index, first == .write && index == 3 ? 1 : 0)
                    if (try? storage.object(forKey: "key \(index)")) != expected { Issue.record("key \(index) wrong while open") }
                }
                #expect(!storage.existsObject(forKey: "key 4"))
                #expect(Self.reports(storage) == 1)
            }
            let storage = try openDataStore(path)
            #expect(storage.engine.store.recoveryIssues.isEmpty, "the directory written at close was damaged: \(storage.engine.store.recoveryIssues)")
            #expect(storage.allKeys.count == Self.count - 1)
            for index in 0..<Self.count where index != 4 {
                let expected = Self.payload(index, first == .write && index == 3 ? 1 : 0)
                if (try? storage.object(forKey: "key \(index)")) != expected { Issue.record("key \(index) wrong after reopening") }
            }
        }
    }

    @Test("a directory cut short in place while open: the pages past the cut fail their reads, every answer stays right")
    func directoryCutWhileOpen() throws {
        try Self.withStore { path in
            do {
                let storage = try openDataStore(path)
                #expect(try storage.object(forKey: "key 1") == Self.payload(1, 0))
                #expect(truncate(Self.directoryPath(path), off_t(try Damage.size(Self.directoryPath(path)) / 3)) == 0)
                Self.expectEveryKey(storage, "while open")
                #expect(Self.reports(storage) == 1)
            }
            let storage = try openDataStore(path)
            #expect(storage.engine.store.recoveryIssues.isEmpty, "\(storage.engine.store.recoveryIssues)")
            #expect(storage.allKeys.count == Self.count)
        }
    }

    @Test("pages of a key uses file changed in place before their first read: every answer stays right, and the damage is reported")
    func usesPagesChangedBeforeFirstRead() throws {
        try Self.withStore { path in
            do {
                let storage = try openDataStore(path) // reads every key: its close writes a key uses file
                for index in 0..<Self.count { _ = try storage.object(forKey: "key \(index)") }
            }
            let usesLength = try Damage.size(Self.usesPath(path))
            let storage = try openDataStore(path)
            #expect(try storage.object(forKey: "key 1") == Self.payload(1, 0))
            for offset in stride(from: UsesFormat.headerLength + 3, to: usesLength, by: DirectoryFormat.pageLength) {
                try Damage.flip(Self.usesPath(path), at: offset)
            }
            Self.expectEveryKey(storage, "while open")
            #expect(Self.reports(storage) == 1)
        }
    }

    @Test("a store with value files whose directory pages changed before the open removes none of them: every value is read")
    func valueFilesKeptWhenPagesFail() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            let large = Data(repeating: 7, count: 300 << 10) // a value file each
            do {
                let storage = try openDataStore(path)
                try storage.setObjects(Dictionary(uniqueKeysWithValues: (0..<Self.count).map { ("key \($0)", Self.payload($0, 0)) }))
                for index in 0..<3 { try storage.setObject(large, forKey: "large \(index)") }
            }
            try Self.flipEveryPage(ofDirectory: Self.directoryPath(path))
            let storage = try openDataStore(path)
            for index in 0..<3 { #expect(try storage.object(forKey: "large \(index)") == large) }
            for index in stride(from: 0, to: Self.count, by: 11) { #expect(try storage.object(forKey: "key \(index)") == Self.payload(index, 0)) }
        }
    }

    @Test("a reader whose directory page fails replays the segments and does not take that directory again")
    func readerDropsFailedDirectory() throws {
        try Self.withStore { path in
            let reader = try openDataStore(path, readOnly: true)
            #expect(try reader.object(forKey: "key 1") == Self.payload(1, 0))
            try Self.flipEveryPage(ofDirectory: Self.directoryPath(path))
            Self.expectEveryKey(reader, "in the reader")
            #expect(reader.allKeys.count == Self.count)
            // Reported as it reopened: by the page check, or by the reader's own look at the files (without a live writer, at every call).
            #expect(reader.engine.store.recoveryIssues.contains { "\($0)".contains("key directory") }, "\(reader.engine.store.recoveryIssues)")
            #expect(Self.pages(reader) == (false, nil), "the reader took the failed directory again")
            #expect(FileManager.default.fileExists(atPath: Self.directoryPath(path)), "a reader removed a file")
        }
    }
}
