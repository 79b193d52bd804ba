import Foundation
import Stash
import Synchronization

/// One store in a comparison — Stash or a peer — behind the few operations the scenarios need.
protocol Side<Value>: AnyObject, Sendable {
    associatedtype Value: Sendable
    /// `expiry` nil: never expires.
    func set(_ value: Value, forKey key: String, expiry: Date?) throws
    /// The value of `key`; throws when it is missing (a benchmark that reads a missing key is broken).
    func get(_ key: String) throws -> Value
    func remove(_ key: String) throws
    func exists(_ key: String) throws -> Bool
}

extension Side {
    func set(_ value: Value, forKey key: String) throws {
        try set(value, forKey: key, expiry: nil)
    }
}

/// Stash's app-facing stack, `Storage<T>`: memory in front of disk, values through a transformer.
final class StashStorageSide<T: Sendable>: Side {
    let storage: Storage<T>

    init(_ kind: Kind<T>, in directory: URL, durable: Bool = false) throws {
        storage = try Pair<T>.openStash(kind, in: directory, durable: durable)
    }

    func set(_ value: T, forKey key: String, expiry: Date?) throws {
        try storage.setObject(value, forKey: key, expiry: expiry.map(Expiry.date))
    }

    func get(_ key: String) throws -> T { try storage.object(forKey: key) }
    func remove(_ key: String) throws { try storage.removeObject(forKey: key) }
    func exists(_ key: String) throws -> Bool { try storage.existsObject(forKey: key) }
}

/// Stash's disk engine alone, `DiskStorage<Data>`: no memory layer, no JSON — the engine rows.
/// `readOnly` and `allowsWritersInOtherProcesses`: the `DiskConfig` settings of the multi-process rows.
final class StashDiskSide: Side {
    let storage: DiskStorage<Data>

    init(in directory: URL, durable: Bool = false, readOnly: Bool = false, allowsWritersInOtherProcesses: Bool = false) throws {
        storage = try DiskStorage(config: DiskConfig(name: "stash", directory: directory, durable: durable, readOnly: readOnly,
                                                     allowsWritersInOtherProcesses: allowsWritersInOtherProcesses),
                                  transformer: TransformerFactory.forData())
    }

    func set(_ value: Data, forKey key: String, expiry: Date?) throws {
        try storage.setObject(value, forKey: key, expiry: expiry.map(Expiry.date))
    }

    func get(_ key: String) throws -> Data { try storage.object(forKey: key) }
    func remove(_ key: String) throws { try storage.removeObject(forKey: key) }
    func exists(_ key: String) throws -> Bool { storage.existsObject(forKey: key) }
}

/// SQLite with the same codec as Stash's transformer, and (for app rows) a locked dictionary in
/// front of it: what an app developer builds instead of Stash.
final class SQLiteSide<T: Sendable>: Side {
    let store: SQLiteStore
    private let codec: Codec<T>
    /// nil: every read goes to SQLite (the engine rows).
    private let front: Mutex<[String: T]>?

    init(_ codec: Codec<T>, in directory: URL, durable: Bool = false, dictionary: Bool = true) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try SQLiteStore(path: directory.appendingPathComponent("sqlite.db").path, durable: durable)
        self.codec = codec
        front = dictionary ? Mutex([:]) : nil
    }

    func set(_ value: T, forKey key: String, expiry: Date?) throws {
        try store.set(try codec.encode(value), forKey: key, expiry: expiry?.timeIntervalSince1970)
        front?.withLock { $0[key] = value }
    }

    /// Every pair encoded, then written in one SQLite transaction (``SQLiteStore/setAll(_:expiry:)``).
    func setAll(_ pairs: [(key: String, value: T)]) throws {
        try store.setAll(try pairs.map { ($0.key, try codec.encode($0.value)) })
        front?.withLock { front in for pair in pairs { front[pair.key] = pair.value } }
    }

    func get(_ key: String) throws -> T {
        if let value = front?.withLock({ $0[key] }) { return value }
        guard let data = try store.value(forKey: key, now: Date().timeIntervalSince1970) else {
            throw BenchError("SQLite: no value for \(key)")
        }
        let value = try codec.decode(data)
        front?.withLock { $0[key] = value }
        return value
    }

    func remove(_ key: String) throws {
        _ = front?.withLock { $0.removeValue(forKey: key) }
        try store.remove(forKey: key)
    }

    func exists(_ key: String) throws -> Bool {
        if front?.withLock({ $0[key] != nil }) == true { return true }
        return try store.contains(key, now: Date().timeIntervalSince1970)
    }
}

/// LevelDB with raw `Data` values (no expiry: the engine rows never ask for one).
final class LevelDBSide: Side {
    let store: LevelDBStore

    init(in directory: URL, durable: Bool = false) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try LevelDBStore(path: directory.appendingPathComponent("leveldb").path, durable: durable)
    }

    func set(_ value: Data, forKey key: String, expiry: Date?) throws { try store.set(value, forKey: key) }

    func get(_ key: String) throws -> Data {
        guard let value = try store.value(forKey: key) else { throw BenchError("LevelDB: no value for \(key)") }
        return value
    }

    func remove(_ key: String) throws { try store.remove(forKey: key) }
    func exists(_ key: String) throws -> Bool { try store.value(forKey: key) != nil }
}

/// LMDB with raw `Data` values (no expiry: the engine rows never ask for one).
final class LMDBSide: Side {
    let store: LMDBStore

    init(in directory: URL) throws {
        store = try LMDBStore(path: directory.appendingPathComponent("lmdb").path)
    }

    func set(_ value: Data, forKey key: String, expiry: Date?) throws { try store.set(value, forKey: key) }

    func get(_ key: String) throws -> Data {
        guard let value = try store.value(forKey: key) else { throw BenchError("LMDB: no value for \(key)") }
        return value
    }

    func remove(_ key: String) throws { try store.remove(forKey: key) }
    func exists(_ key: String) throws -> Bool { try store.value(forKey: key) != nil }
}

/// Stash (always first) and its peers, each in a folder of its own under one directory, over the
/// same keys and values. `reopen()` releases every store, then opens each again: cold memory,
/// warm OS cache, like a new process.
final class Lineup<T: Sendable> {
    let kind: Kind<T>
    let directory: URL
    let keys: [String]
    /// Stash's name first, then the peers' (as they appear in the scenario names: `… vs LevelDB`).
    let names: [String]
    private let openers: [() throws -> any Side<T>]
    private(set) var sides: [any Side<T>] = []

    init(_ kind: Kind<T>, in directory: URL, keyCount: Int, _ contenders: [(String, (URL) throws -> any Side<T>)]) throws {
        self.kind = kind
        self.directory = directory
        keys = (0..<keyCount).map(Fixtures.key)
        names = contenders.map(\.0)
        openers = contenders.map { name, open in { try open(directory.appendingPathComponent(name.filter(\.isLetter))) } }
        try reopen()
    }

    var stash: any Side<T> { sides[0] }
    var peers: Range<Int> { 1..<sides.count }

    func reopen() throws {
        sides = []
        sides = try openers.map { try $0() }
    }

    /// Releases every store and deletes the folder.
    func close() {
        sides = []
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes every key into every store, untimed (for runs whose `--filter` skips the writes).
    func populate(revision: Int = 0) throws {
        for side in sides {
            for index in keys.indices { try side.set(kind.value(index, revision), forKey: keys[index]) }
        }
    }
}
