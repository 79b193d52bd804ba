import Foundation
import Stash

/// A Stash store and a min store side by side, in sibling folders, over the same keys and values.
final class Pair<T: Sendable> {
    let kind: Kind<T>
    let directory: URL
    let keys: [String]
    let durable: Bool
    private var stashStorage: Storage<T>?
    private var minStore: MinStore<T>?

    init(_ kind: Kind<T>, in directory: URL, keyCount: Int, durable: Bool = false) throws {
        self.kind = kind
        self.directory = directory
        self.durable = durable
        keys = (0..<keyCount).map(Fixtures.key)
        try reopen()
    }

    var stash: Storage<T> { stashStorage! }
    var min: MinStore<T> { minStore! }

    /// Fresh instances on the same folders: cold memory, warm OS cache. The old ones are released
    /// first, so Stash's engine closes and the new one replays its journal like a new process would.
    func reopen() throws {
        stashStorage = nil
        minStore = nil
        stashStorage = try Self.openStash(kind, in: directory, durable: durable)
        minStore = try MinStore(directory: directory.appendingPathComponent("min").path, codec: kind.codec, durable: durable)
    }

    /// Releases both stores and deletes their folders.
    func close() {
        stashStorage = nil
        minStore = nil
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes every key into both stores, untimed (for runs whose `--filter` skips the write scenarios).
    func populate(revision: Int = 0) throws {
        for index in keys.indices {
            try stash.setObject(kind.value(index, revision), forKey: keys[index])
            try min.setObject(kind.value(index, revision), forKey: keys[index])
        }
    }

    static func openStash(_ kind: Kind<T>, in directory: URL, durable: Bool = false) throws -> Storage<T> {
        try Storage(diskConfig: DiskConfig(name: "stash", directory: directory, durable: durable),
                    memoryConfig: MemoryConfig(), transformer: kind.transformer)
    }
}
