import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Contract item 14 (invalid input is refused up front with a clear error, before anything is
/// written) and item 11's rule for two storages of one folder with different settings.
@Suite("Invalid input")
struct InvalidInputTests {
    private let ann = User(name: "ann", age: 30)

    /// Expiries that are no usable time: NaN, infinities, a date past `Date.distantFuture` (year 4001).
    /// Named, because Foundation traps when describing a NaN `Date` (as test arguments are described).
    static let invalidExpiries: [NamedExpiry] = [
        NamedExpiry("seconds NaN", .seconds(.nan)), NamedExpiry("seconds +inf", .seconds(.infinity)),
        NamedExpiry("seconds -inf", .seconds(-.infinity)),
        NamedExpiry("date NaN", .date(Date(timeIntervalSince1970: .nan))),
        NamedExpiry("date +inf", .date(Date(timeIntervalSince1970: .infinity))),
        NamedExpiry("date past year 4001", .date(Date.distantFuture.addingTimeInterval(86_400))),
        NamedExpiry("seconds that resolve past year 4001", .seconds(Date.distantFuture.timeIntervalSince1970)),
    ]

    struct NamedExpiry: Sendable, CustomTestStringConvertible {
        let name: String
        let expiry: Expiry
        init(_ name: String, _ expiry: Expiry) { (self.name, self.expiry) = (name, expiry) }
        var testDescription: String { name }
    }

    // MARK: Expiry (contract 14)

    // Contract 14: a NaN or otherwise unusable expiry is refused by every layer, and nothing is written.
    @Test("an unusable expiry is refused with invalidExpiry by Storage, DiskStorage and MemoryStorage; nothing is written",
          arguments: invalidExpiries)
    func invalidExpiryIsRefused(named: NamedExpiry) async throws {
        let expiry = named.expiry
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory, valuesAsFiles: true) // a file per value: none may be left behind
        try storage.setObject(ann, forKey: "k")
        let disk = try DiskStorage(config: directory.diskConfig("disk"), transformer: TransformerFactory.forData())
        let memory = MemoryStorage<Int>()

        #expect(Self.isInvalidExpiry(storageError { try storage.setObject(User(name: "new", age: 1), forKey: "k", expiry: expiry) }))
        #expect(Self.isInvalidExpiry(storageError { try storage.setObject(ann, forKey: "other", expiry: expiry) }))
        #expect(Self.isInvalidExpiry(storageError { try disk.setObject(Data("x".utf8), forKey: "k", expiry: expiry) }))
        #expect(Self.isInvalidExpiry(storageError { try memory.setObject(1, forKey: "k", expiry: expiry) }))
        // (Not `#expect(throws:)`: it reflects the error, and Foundation traps describing a NaN `Date`.)
        var asyncError: StorageError?
        do { try await storage.async.setObject(ann, forKey: "async", expiry: expiry) } catch { asyncError = error as? StorageError }
        #expect(Self.isInvalidExpiry(asyncError))

        #expect(try storage.object(forKey: "k") == ann) // the old value is untouched
        #expect(storage.allKeys == ["k"])
        #expect(disk.allKeys.isEmpty && memory.count == 0)
        // No value file beside the one of "k" (nothing staged or left behind).
        let files = try FileManager.default.contentsOfDirectory(atPath: storage.path).filter(DiskStore.isValueFileName)
        #expect(files.count == 1)
    }

    // Contract 14: the configurations' default expiry is checked when the store is opened (seconds
    // that only resolve past year 4001 at a write are refused by that write, as the test above shows).
    @Test("an unusable default expiry in DiskConfig or MemoryConfig is refused when the storage is opened",
          arguments: invalidExpiries.filter { !$0.expiry.isValid })
    func invalidDefaultExpiryIsRefused(named: NamedExpiry) throws {
        let expiry = named.expiry
        let directory = TemporaryDirectory()
        #expect(Self.isInvalidExpiry(storageError { _ = try makeUserStorage(in: directory, expiry: expiry) }))
        #expect(Self.isInvalidExpiry(storageError {
            _ = try makeUserStorage(in: directory, memory: MemoryConfig(expiry: expiry))
        }))
        #expect(!FileManager.default.fileExists(atPath: directory.storePath())) // nothing was created
        let memory = MemoryStorage<Int>(config: MemoryConfig(expiry: expiry))
        #expect(Self.isInvalidExpiry(storageError { try memory.setObject(1, forKey: "k") }))
        #expect(memory.count == 0)
    }

    // Contract 1 and 14: a NaN expiry used to give contradictory answers; valid edge expiries read back as given.
    @Test("edge expiries that are valid are stored faithfully: negative seconds, distant past, exactly distantFuture")
    func validEdgeExpiries() throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let storage = try makeUserStorage(in: directory, clock: clock)
        try storage.setObject(ann, forKey: "past", expiry: .seconds(-1))
        try storage.setObject(ann, forKey: "ancient", expiry: .date(.distantPast))
        try storage.setObject(ann, forKey: "4001", expiry: .date(.distantFuture))
        let latest = Date.distantFuture.addingTimeInterval(-1)
        try storage.setObject(ann, forKey: "latest", expiry: .date(latest))

        #expect(storageError { _ = try storage.object(forKey: "past") }?.isExpired == true)
        #expect(try !storage.existsObject(forKey: "ancient"))
        #expect(try storage.entry(forKey: "4001").expiry == .never) // what .never resolves to
        let reopened = try makeUserStorage(in: directory, name: "store", clock: clock)
        #expect(try reopened.entry(forKey: "latest").expiry == .date(latest)) // a date stays a date
        #expect(try reopened.existsObject(forKey: "latest"))
    }

    // MARK: Limits (contract 14)

    // Contract 14: a negative size or count limit is refused, not clamped to "unlimited".
    @Test("negative limits in DiskConfig and MemoryConfig are refused with invalidLimit before anything is created")
    func negativeLimitsAreRefused() throws {
        let directory = TemporaryDirectory()
        #expect(Self.limitName(storageError { _ = try makeUserStorage(in: directory, maxSize: -1) }) == "maxSize")
        #expect(Self.limitName(storageError {
            _ = try DiskStorage(config: directory.diskConfig(maxSize: -5), transformer: TransformerFactory.forData())
        }) == "maxSize")
        #expect(Self.limitName(storageError { _ = try makeUserStorage(in: directory, memory: MemoryConfig(countLimit: -1)) }) == "countLimit")
        #expect(Self.limitName(storageError {
            _ = try makeUserStorage(in: directory, memory: MemoryConfig(totalCostLimit: -1))
        }) == "totalCostLimit")
        #expect(!FileManager.default.fileExists(atPath: directory.storePath()))

        let memory = MemoryStorage<Int>(config: MemoryConfig(countLimit: -3))
        #expect(Self.limitName(storageError { try memory.setObject(1, forKey: "k") }) == "countLimit")
        #expect(memory.count == 0)
        #expect(DiskConfig(name: "s", maxSize: -1).maxSize == -1) // kept as given, so the error can name it
    }

    // Contract 14: trimming to a negative size is refused and removes nothing.
    @Test("trim(toSize:) with a negative size throws invalidLimit and removes nothing")
    func negativeTrimIsRefused() throws {
        let directory = TemporaryDirectory()
        let storage = try makeUserStorage(in: directory)
        try storage.setObject(ann, forKey: "k")
        #expect(Self.limitName(storageError { try storage.trim(toSize: -1) }) == "size")
        #expect(storage.allKeys == ["k"])
    }

    // MARK: Two storages on one folder (contract 11)

    // Contract 11: the first opener's maxSize and durable hold; a conflicting second opener gets a clear error.
    @Test("a second storage on an open folder with another maxSize or durable gets configurationConflict")
    func conflictingSecondOpenerIsRefused() throws {
        let directory = TemporaryDirectory()
        let first = try makeUserStorage(in: directory, maxSize: 1_000)
        try first.setObject(ann, forKey: "k")

        let smaller = storageError { _ = try makeUserStorage(in: directory, maxSize: 10) }
        guard case .configurationConflict(let path, let setting, let inForce, let requested)? = smaller else {
            Issue.record("expected configurationConflict, got \(String(describing: smaller))")
            return
        }
        #expect(path == first.path && setting == "maxSize" && inForce == "1000" && requested == "10")

        var durable = directory.diskConfig(maxSize: 1_000)
        durable.durable = true
        let other = storageError { _ = try DiskStorage(config: durable, transformer: TransformerFactory.forData()) }
        guard case .configurationConflict(_, "durable", "false", "true")? = other else {
            Issue.record("expected configurationConflict on durable, got \(String(describing: other))")
            return
        }
        #expect(try first.object(forKey: "k") == ann) // nothing of the first storage's data was evicted

        // The same settings share the engine; once every storage of the folder is gone, new settings apply.
        let same = try makeUserStorage(in: directory, expiry: .seconds(60), maxSize: 1_000)
        #expect(try same.object(forKey: "k") == ann)
    }

    // Contract 11: the first opener's settings hold only while the engine is open.
    @Test("once every storage of a folder is released, the folder opens with new settings")
    func newSettingsAfterRelease() throws {
        let directory = TemporaryDirectory()
        do {
            let first = try makeUserStorage(in: directory, maxSize: 1_000)
            try first.setObject(ann, forKey: "k")
        }
        let second = try makeUserStorage(in: directory, maxSize: 2_000)
        #expect(try second.object(forKey: "k") == ann)
    }

    // MARK: Helpers

    private static func isInvalidExpiry(_ error: StorageError?) -> Bool {
        if case .invalidExpiry? = error { true } else { false }
    }

    private static func limitName(_ error: StorageError?) -> String? {
        if case .invalidLimit(let name, _)? = error { name } else { nil }
    }
}
