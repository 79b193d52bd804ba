import Foundation
import Testing
@testable import Stash

/// A small Codable model, as app code stores them.
struct User: Codable, Sendable, Equatable, Hashable {
    var name: String
    var age: Int
}

/// A small seeded generator (SplitMix64), so random tests are reproducible.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (slightly biased, which is fine for tests); 0 when `bound` is not positive.
    mutating func below(_ bound: Int) -> Int {
        bound > 0 ? Int(next() % UInt64(bound)) : 0
    }
}

/// A clock the test moves by hand, injected as `now:` so expiry is tested without sleeping.
final class TestClock: @unchecked Sendable {
    // @unchecked Sendable: `current` is only touched under `lock`.
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = start
    }

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return current
    }

    func advance(by seconds: TimeInterval) {
        lock.lock()
        current += seconds
        lock.unlock()
    }

    /// The clock as the `now:` function the storages take.
    var function: @Sendable () -> Date { { self.now } }
}

/// A fresh, uniquely named temporary directory, removed when the test that made it ends.
final class TemporaryDirectory {
    let url: URL

    init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StashTests-\(safe.prefix(40))-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    var path: String { url.path }

    /// A disk configuration for a store named `name` inside this directory.
    func diskConfig(_ name: String = "store", expiry: Expiry = .never, maxSize: Int = 0) -> DiskConfig {
        DiskConfig(name: name, expiry: expiry, maxSize: maxSize, directory: url)
    }

    /// The store folder of ``diskConfig(_:expiry:maxSize:)``.
    func storePath(_ name: String = "store") -> String {
        url.appendingPathComponent(name).path
    }
}

/// A `Storage<User>` in `directory`, on `clock`; with `valuesAsFiles`, every value in a file of its own.
func makeUserStorage(
    in directory: TemporaryDirectory,
    name: String = "store",
    expiry: Expiry = .never,
    maxSize: Int = 0,
    memory: MemoryConfig = MemoryConfig(),
    clock: TestClock = TestClock(),
    valuesAsFiles: Bool = false
) throws -> Storage<User> {
    var config = directory.diskConfig(name, expiry: expiry, maxSize: maxSize)
    config.storesValuesAsFiles = valuesAsFiles
    return try Storage<User>(
        diskConfig: config,
        memoryConfig: memory,
        transformer: TransformerFactory.forCodable(ofType: User.self),
        now: clock.function
    )
}

/// Runs `body` and returns the `StorageError` it threw; records an issue if it threw none.
func storageError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> StorageError? {
    do {
        try body()
        Issue.record("expected a StorageError, got none", sourceLocation: sourceLocation)
        return nil
    } catch let error as StorageError {
        return error
    } catch {
        Issue.record("expected a StorageError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

extension StorageError {
    var isNotFound: Bool { if case .notFound = self { true } else { false } }
    var isExpired: Bool { if case .expired = self { true } else { false } }
    var isCorrupted: Bool { if case .corrupted = self { true } else { false } }
    var isDecodingFailed: Bool { if case .decodingFailed = self { true } else { false } }
    var isIO: Bool { if case .io = self { true } else { false } }
}

extension Storage {
    /// Waits until every observer closure queued so far has run (a test hook, no sleeping).
    func waitForObservers() {
        hybridStorage.engine.observers.waitUntilDelivered()
    }

    /// Waits until every operation submitted to the store's queue so far has run.
    func waitForQueue() {
        hybridStorage.engine.sync { _ in }
    }
}

// MARK: - Executables built with the tests

/// The executable product `name` of this package (`stash`, `StashTorture`), built with the tests: next to
/// the test bundle (`<scratch>/debug/StashPackageTests.xctest` on Linux, a bundle in the products folder on
/// Apple platforms), else found under the build folder. Nil if it was not built.
func builtExecutable(named name: String) -> URL? {
    var folders = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
                   URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
    folders += Bundle.allBundles.filter { $0.bundleURL.pathExtension == "xctest" }.map { $0.bundleURL.deletingLastPathComponent() }
    if let found = folders.lazy.map({ $0.appendingPathComponent(name) }).first(where: isExecutableFile) { return found }
    // Fallback: search the build folders that hold the products folder (e.g. `<scratch>/<triple>/debug`).
    for root in folders.map({ $0.deletingLastPathComponent() }) {
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            if walker?.level ?? 0 > 3 { walker?.skipDescendants() }
            if url.lastPathComponent == name, isExecutableFile(url) { return url }
        }
    }
    return nil
}

private func isExecutableFile(_ url: URL) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        && FileManager.default.isExecutableFile(atPath: url.path)
}

extension DiskStore {
    /// Whether `name` is one of the store's value files (`<16 hex digits>.value`).
    static func isValueFileName(_ name: String) -> Bool {
        ValueFiles.id(ofName: name) != nil
    }
}

/// Waits until `condition` holds, for another thread's progress that no hook reports (it polls;
/// it does not wait for time to pass); fails after `limit` seconds.
func waitUntil(limit: TimeInterval = 30, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(limit)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("the awaited condition did not hold within \(limit) s", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        usleep(200)
    }
}
