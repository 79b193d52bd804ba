public import Foundation
import StashEngine

extension Storage where T: Codable {
    /// Opens (creating if needed) a store of `Codable` values in one line, with defaults that suit an app.
    ///
    /// ```swift
    /// struct Todo: Codable, Sendable { var title: String; var done: Bool }
    /// let todos = try Storage<[Todo]>(name: "Todos", location: .persistent)
    /// try todos.setObject([Todo(title: "Milk", done: false)], forKey: "inbox")
    /// ```
    ///
    /// Values are stored as the JSON of `encoder` (a plain `JSONEncoder` by default), written and read
    /// by Stash's streaming coder with `encoder`'s and `decoder`'s strategies
    /// (``TransformerFactory/forCodable(ofType:encoder:decoder:)``): pass your own for ISO 8601 dates or
    /// snake_case keys. For other settings, or another transformer, use
    /// ``init(diskConfig:memoryConfig:transformer:now:)``, which this initializer calls.
    /// - Parameters:
    ///   - name: The store's folder inside `location`, as ``DiskConfig/name``.
    ///   - expiry: The expiry of values written without one; `.never` by default.
    ///   - maxSize: The most bytes of values kept on disk; 0 (the default) means no limit.
    ///   - location: Where the store's folder lives (``StorageLocation``): ``StorageLocation/persistent``
    ///     for data that must stay (what the user made), ``StorageLocation/caches`` (the default) for
    ///     data that can be fetched again, which the system may delete when storage runs low;
    ///     ``StorageLocation/appGroup(_:)`` or ``StorageLocation/folder(_:)``.
    ///   - memoryConfig: The memory layer's limits; by default ``MemoryConfig/standard``
    ///     (1,000 values and 20 MB of encoded bytes).
    ///   - encoder: Encodes values (its date and key strategies decide the stored JSON).
    ///   - decoder: Decodes stored values; its strategies must match `encoder`'s.
    ///   - now: The clock that expiry is measured against (inject one in tests).
    /// - Throws: ``StorageError/locationUnavailable(_:)`` for an App Group this process has no
    ///   container for, and the errors of ``init(diskConfig:memoryConfig:transformer:now:)``.
    public convenience init(
        name: String,
        expiry: Expiry = .never,
        maxSize: Int = 0,
        location: StorageLocation = .caches,
        memoryConfig: MemoryConfig = .standard,
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try self.init(
            diskConfig: DiskConfig(name: name, expiry: expiry, maxSize: maxSize, directory: location.directory()),
            memoryConfig: memoryConfig,
            transformer: TransformerFactory.forCodable(ofType: T.self, encoder: encoder, decoder: decoder),
            now: now
        )
    }

    /// Opens a store of `Codable` values in `directory` (nil: the caches folder, ``DiskConfig/cachesDirectory``,
    /// as the first versions of this initializer did); ``init(name:expiry:maxSize:location:memoryConfig:encoder:decoder:now:)``
    /// with ``StorageLocation/folder(_:)`` says the same.
    /// - Parameters: As ``init(name:expiry:maxSize:location:memoryConfig:encoder:decoder:now:)``, and
    ///   `directory`: the folder the store's folder is made in.
    public convenience init(
        name: String,
        expiry: Expiry = .never,
        maxSize: Int = 0,
        directory: URL?,
        memoryConfig: MemoryConfig = .standard,
        encoder: JSONEncoder = JSONEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try self.init(
            diskConfig: DiskConfig(name: name, expiry: expiry, maxSize: maxSize, directory: directory),
            memoryConfig: memoryConfig,
            transformer: TransformerFactory.forCodable(ofType: T.self, encoder: encoder, decoder: decoder),
            now: now
        )
    }
}

extension MemoryConfig {
    /// The memory limits of the one-line ``Storage/init(name:expiry:maxSize:location:memoryConfig:encoder:decoder:now:)``:
    /// at most 1,000 values and 20 MB of encoded bytes in memory, least recently used evicted first
    /// (evicted values are still on disk). `MemoryConfig()` has no limits at all.
    public static let standard = MemoryConfig(countLimit: 1_000, totalCostLimit: 20_000_000)
}
