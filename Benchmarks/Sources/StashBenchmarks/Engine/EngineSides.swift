import CPeerDriver
import Foundation
import Stash

/// An operation of the engine rows on one key.
enum EngineOp {
    case set(revision: Int)
    case get
    case remove
}

/// One engine in the engine rows — Stash's `DiskStorage<Data>`, or a peer — operating on the keys
/// and values of an ``EngineFixture`` by index, so nothing is built while the clock runs.
protocol EngineSide: AnyObject {
    func set(_ index: Int, revision: Int) throws
    /// Reads key `index` (it must be there) and returns its value's length.
    func get(_ index: Int) throws -> Int
    func remove(_ index: Int) throws
    /// `op` on every key of `indices`, timed; nanoseconds per operation.
    func batch(_ op: EngineOp, _ indices: UnsafeBufferPointer<Int32>) throws -> Double
}

extension EngineSide {
    func batch(_ op: EngineOp, _ indices: UnsafeBufferPointer<Int32>) throws -> Double {
        switch op {
        case .set(let revision):
            return try Measure.nsPerOp(indices.count) { for index in indices { try set(Int(index), revision: revision) } }
        case .get:
            return try Measure.nsPerOp(indices.count) { for index in indices { consume(try get(Int(index))) } }
        case .remove:
            return try Measure.nsPerOp(indices.count) { for index in indices { try remove(Int(index)) } }
        }
    }
}

/// An engine of the rows: its name (`… vs <name>`) and how to open it in a folder of its own.
struct EngineContender {
    var name: String
    var open: (URL, EngineFixture) throws -> any EngineSide

    /// The folder of `name` under `root` (letters only: `LevelDB verify_checksums` shares LevelDB's).
    static func folder(_ name: String, under root: URL) -> URL {
        root.appendingPathComponent(String(name.prefix { $0 != " " }.filter(\.isLetter)))
    }

    static var stash: EngineContender { EngineContender(name: "Stash") { try StashEngineSide(in: $0, $1) } }
    static var leveldb: EngineContender { EngineContender(name: "LevelDB") { try LevelDBEngineSide(in: $0, $1) } }
    static var lmdb: EngineContender { EngineContender(name: "LMDB") { try LMDBEngineSide(in: $0, $1) } }
    static var sqlite: EngineContender { EngineContender(name: "SQLite") { try SQLiteEngineSide(in: $0, $1) } }
    static var peers: [EngineContender] { [leveldb, lmdb, sqlite] }
}

/// Stash's disk engine alone, `DiskStorage<Data>` (no memory layer, no transformer work), with the
/// fixture's keys and values as the `String`s and `Data` its API takes.
final class StashEngineSide: EngineSide {
    let storage: DiskStorage<Data>
    private let fixture: EngineFixture

    init(in folder: URL, _ fixture: EngineFixture, readOnly: Bool = false, allowsWritersInOtherProcesses: Bool = false) throws {
        storage = try StashDiskSide(in: folder, readOnly: readOnly, allowsWritersInOtherProcesses: allowsWritersInOtherProcesses).storage
        self.fixture = fixture
    }

    func set(_ index: Int, revision: Int) throws {
        try storage.setObject(fixture.valueData[revision][index % fixture.valueCount], forKey: fixture.keyStrings[index])
    }

    func get(_ index: Int) throws -> Int { try storage.object(forKey: fixture.keyStrings[index]).count }
    func remove(_ index: Int) throws { try storage.removeObject(forKey: fixture.keyStrings[index]) }
}

/// LevelDB from Swift with the least wrapper: C buffers straight into its C API.
/// `verifyChecksums`: reads with `verify_checksums=true` (the row beside the default one).
final class LevelDBEngineSide: EngineSide {
    let store: LevelDBStore
    private let fixture: EngineFixture
    private let verifyChecksums: Bool

    init(in folder: URL, _ fixture: EngineFixture) throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        store = try LevelDBStore(path: folder.appendingPathComponent("leveldb").path)
        self.fixture = fixture
        verifyChecksums = false
    }

    /// The same open store, reading with `verify_checksums=true`.
    init(verifying other: LevelDBEngineSide) {
        (store, fixture, verifyChecksums) = (other.store, other.fixture, true)
    }

    func set(_ index: Int, revision: Int) throws {
        try store.rawSet(key: fixture.key(index), count: EngineFixture.keySize,
                         value: fixture.value(index, revision: revision), count: EngineFixture.valueSize)
    }

    func get(_ index: Int) throws -> Int {
        try store.rawGet(key: fixture.key(index), count: EngineFixture.keySize, verifyChecksums: verifyChecksums)
    }

    func remove(_ index: Int) throws { try store.rawRemove(key: fixture.key(index), count: EngineFixture.keySize) }
}

/// LMDB from Swift with the least wrapper: C buffers straight into `mdb_put`/`mdb_get`/`mdb_del`.
final class LMDBEngineSide: EngineSide {
    let store: LMDBStore
    private let fixture: EngineFixture

    init(in folder: URL, _ fixture: EngineFixture) throws {
        store = try LMDBStore(path: folder.appendingPathComponent("lmdb").path)
        self.fixture = fixture
    }

    func set(_ index: Int, revision: Int) throws {
        try store.rawSet(key: fixture.key(index), count: EngineFixture.keySize,
                         value: fixture.value(index, revision: revision), count: EngineFixture.valueSize)
    }

    func get(_ index: Int) throws -> Int { try store.rawGet(key: fixture.key(index), count: EngineFixture.keySize) }
    func remove(_ index: Int) throws { try store.rawRemove(key: fixture.key(index), count: EngineFixture.keySize) }
}

/// SQLite from Swift with the least wrapper (``SQLiteRaw``); `busyTimeout` (milliseconds): how long a
/// statement waits for another process's lock (the two-process rows).
final class SQLiteEngineSide: EngineSide {
    let store: SQLiteRaw
    private let fixture: EngineFixture

    init(in folder: URL, _ fixture: EngineFixture, busyTimeout: Int32 = 0) throws {
        store = try SQLiteRaw(folder: folder, busyTimeout: busyTimeout)
        self.fixture = fixture
    }

    func set(_ index: Int, revision: Int) throws {
        try store.set(key: fixture.key(index), count: EngineFixture.keySize,
                      value: fixture.value(index, revision: revision), count: EngineFixture.valueSize)
    }

    func get(_ index: Int) throws -> Int { try store.get(key: fixture.key(index), count: EngineFixture.keySize) }
    func remove(_ index: Int) throws { try store.remove(key: fixture.key(index), count: EngineFixture.keySize) }
}
