public import Foundation
import StashEngine

extension Storage {
    /// A store of its own that lives in memory as long as the storage does: for tests and SwiftUI previews.
    ///
    /// ```swift
    /// let todos = try Storage<[Todo]>.inMemory()
    /// try todos.setObject([Todo(title: "Milk", done: false)], forKey: "inbox")
    /// #Preview { TodoList(model: ObservableValue("inbox", in: todos)) }
    /// ```
    /// It is a ``Storage`` like any other (the same engine, API, expiry, batches, transactions,
    /// compaction and observers), so what a test shows holds for the app's store; only the engine's
    /// files are kept in this process's memory instead of a file system. Nothing is written to disk,
    /// no file or folder is created anywhere, and nothing is durable. No other store, process or
    /// later launch sees it; its memory is freed once the storage, its views
    /// (``transform(transformer:)``) and the observable objects on it are released.
    ///
    /// Its ``path`` (and the paths in its errors and in a large value's `Entry.filePath`) says so:
    /// it starts with `/dev/null/stash-in-memory/`, which names nothing on disk.
    /// - Parameters:
    ///   - name: A label for the store (`"Todos"`), seen in its ``path``; every call makes a new, empty
    ///     store all the same.
    ///   - memoryConfig: The memory layer's limits; no limits by default.
    ///   - transformer: Converts values to bytes and back.
    ///   - now: The clock that expiry is measured against (inject a test clock).
    /// - Throws: ``StorageError/invalidLimit(name:value:)`` for a negative limit in `memoryConfig`.
    public static func inMemory(
        name: String = "store",
        memoryConfig: MemoryConfig = MemoryConfig(),
        transformer: Transformer<T>,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> Storage<T> {
        try inMemory(name: name, memoryConfig: memoryConfig, transformer: transformer, now: now, folder: MemoryVolume.newFolderPath())
    }

    /// ``inMemory(name:memoryConfig:transformer:now:)`` in the memory folder `folder` (tests name it
    /// to lower the engine's thresholds for it).
    static func inMemory(name: String, memoryConfig: MemoryConfig, transformer: Transformer<T>,
                         now: @escaping @Sendable () -> Date, folder: String) throws -> Storage<T> {
        let config = DiskConfig(name: name.isEmpty ? "store" : name, directory: URL(fileURLWithPath: folder, isDirectory: true))
        try memoryConfig.validate()
        let disk = try DiskStorage(config: config, transformer: transformer, now: now)
        let memory = MemoryStorage<T>(config: memoryConfig, now: now)
        let owned = OwnedFolder(path: folder, engine: disk.engine)
        return Storage(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk), ownedFolder: owned)
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

/// The memory folder of an in-memory store (``MemoryVolume``): removed, and its memory freed, when the
/// last storage of it lets go, after its engine (held here, so it closes first: no file of the folder
/// is open when it goes).
final class OwnedFolder: Sendable {
    let path: String
    private let engine: Locked<DiskEngine?>

    init(path: String, engine: DiskEngine) {
        self.path = path
        self.engine = Locked(engine, order: .inMemoryFolder)
    }

    deinit {
        engine.withLock { $0 = nil } // the engine closes here unless an operation still holds it
        MemoryVolume.removeFolder(path)
    }
}
