import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// A small Codable model, as app code stores them.
struct User: Codable, Sendable, Equatable, Hashable {
    var name: String
    var age: Int
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

extension DiskStore {
    /// Whether `name` is one of the store's value files (`<16 hex digits>.value`).
    static func isValueFileName(_ name: String) -> Bool {
        ValueFiles.id(ofName: name) != nil
    }
}

/// Waits until `condition` holds, for another thread's progress that no hook reports (it polls;
/// it does not wait for time to pass); fails after `limit` seconds.
func waitUntil(limit: TimeInterval = TestDeadline.long, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool) throws {
    let deadline = Date().addingTimeInterval(limit)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("the awaited condition did not hold within \(limit) s", sourceLocation: sourceLocation)
            throw CancellationError()
        }
        usleep(200)
    }
}

/// A weak reference held in a constant: `weak let` needs Swift 6.2 (the tests build with 6.0), and
/// Swift 6.2 warns about a `weak var` that is never assigned again.
struct WeakReference<Object: AnyObject> {
    weak var object: Object?

    init(_ object: Object?) {
        self.object = object
    }
}
