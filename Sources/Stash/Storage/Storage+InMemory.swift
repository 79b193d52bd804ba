public import Foundation
import StashEngine

extension Storage {
    /// A store of its own that lives as long as the storage does: for tests and SwiftUI previews.
    ///
    /// ```swift
    /// let todos = try Storage<[Todo]>.inMemory()
    /// try todos.setObject([Todo(title: "Milk", done: false)], forKey: "inbox")
    /// #Preview { TodoList(model: ObservableValue("inbox", in: todos)) }
    /// ```
    /// It is a ``Storage`` like any other (the same engine, API, expiry, batches and observers), so
    /// what a test shows holds for the app's store. Its folder is new and private to it: in memory on
    /// Linux (`/dev/shm`), in the temporary folder elsewhere. No other store, process or later
    /// launch sees it, and it is removed once the storage, its views (``transform(transformer:)``)
    /// and the observable objects on it are released. Nothing is durable.
    /// - Parameters:
    ///   - name: A label for the folder (`"Todos"`); every call makes a new, empty store all the same.
    ///   - memoryConfig: The memory layer's limits; no limits by default.
    ///   - transformer: Converts values to bytes and back.
    ///   - now: The clock that expiry is measured against (inject a test clock).
    /// - Throws: ``StorageError/io(operation:path:underlying:)`` when the folder cannot be created.
    public static func inMemory(
        name: String = "store",
        memoryConfig: MemoryConfig = MemoryConfig(),
        transformer: Transformer<T>,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> Storage<T> {
        let parent = OwnedFolder.parent.appendingPathComponent("stash-in-memory-\(UUID().uuidString)", isDirectory: true)
        let config = DiskConfig(name: name.isEmpty ? "store" : name, directory: parent)
        try memoryConfig.validate()
        let disk = try DiskStorage(config: config, transformer: transformer, now: now)
        let memory = MemoryStorage<T>(config: memoryConfig, now: now)
        let folder = OwnedFolder(path: parent.path, engine: disk.engine)
        return Storage(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk), ownedFolder: folder)
    }
}

extension Storage where T: Codable {
    /// A store of `Codable` values of its own, for tests and previews (see
    /// ``inMemory(name:memoryConfig:transformer:now:)``); values are JSON, as in ``init(name:expiry:maxSize:location:memoryConfig:encoder:decoder:now:)``.
    public static func inMemory(
        name: String = "store",
        memoryConfig: MemoryConfig = MemoryConfig(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> Storage<T> {
        try inMemory(name: name, memoryConfig: memoryConfig, transformer: TransformerFactory.forCodable(ofType: T.self), now: now)
    }
}

/// The folder of an in-memory store: removed when the last storage of it lets go, after its engine
/// (held here, so it closes first: nothing is written into a removed folder).
final class OwnedFolder: Sendable {
    let path: String
    private let engine: Locked<DiskEngine?>

    init(path: String, engine: DiskEngine) {
        self.path = path
        self.engine = Locked(engine, order: .inMemoryFolder)
    }

    deinit {
        engine.withLock { $0 = nil } // the engine closes here unless an operation still holds it
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Where in-memory stores go: `/dev/shm` (a memory file system) when this system has one we may write.
    static var parent: URL {
        #if os(Linux)
        if access("/dev/shm", W_OK | X_OK) == 0 { return URL(fileURLWithPath: "/dev/shm", isDirectory: true) }
        #endif
        return FileManager.default.temporaryDirectory
    }
}
