import Foundation
import Stash
import Synchronization
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// Converts values to bytes and back; the min store's counterpart of Stash's `Transformer`.
struct Codec<T>: Sendable {
    var encode: @Sendable (T) throws -> Data
    var decode: @Sendable (Data) throws -> T

    /// JSON, with one encoder and one decoder reused for every call (as Stash does).
    static func json() -> Codec<T> where T: Codable & Sendable {
        let encoder = JSONEncoder()
        let decoder = JSONDecoder()
        return Codec(encode: { try encoder.encode($0) }, decode: { try decoder.decode(T.self, from: $0) })
    }

    /// Stash's JSON coder (issue #31), through its default Codable transformer: the same bytes.
    static func stashJSON() -> Codec<T> where T: Codable & Sendable {
        let transformer = TransformerFactory.forCodable(ofType: T.self)
        return Codec(encode: transformer.toData, decode: transformer.fromData)
    }

    static var identity: Codec<Data> {
        Codec<Data>(encode: { $0 }, decode: { $0 })
    }
}

/// The floor of Stash's design, written as plainly as possible: the baseline of most scenarios.
///
/// Memory is a `Mutex<[String: T]>`: no LRU, no limits, no expiry. Disk is one file per key,
/// named by the key itself (the benchmark's keys are safe file names; Stash must hash any key),
/// written with POSIX open/write/close to a temporary name and renamed, read with
/// open/fstat/read/close. No index, no journal, no queue: whatever Stash spends beyond this is
/// the price of its promises (LRU, limits, expiry, hostile keys, observers, one order).
final class MinStore<T: Sendable>: Sendable {
    let directory: String
    private let codec: Codec<T>
    private let durable: Bool
    /// The folder, open for fsync after each rename when `durable`.
    private let directoryFD: Int32
    private let memory = Mutex<[String: T]>([:])
    /// Numbers temporary files, so two threads writing one key never share one.
    private let temporaryCounter = Atomic<UInt64>(0)

    init(directory: String, codec: Codec<T>, durable: Bool = false) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        self.directory = directory
        self.codec = codec
        self.durable = durable
        directoryFD = durable ? open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1
        if durable, directoryFD < 0 { throw RawFile.Failure(call: "open", path: directory, code: errno) }
    }

    deinit {
        if directoryFD >= 0 { close(directoryFD) }
    }

    func path(forKey key: String) -> String {
        directory + "/" + key
    }

    /// Memory first, then the file (decoded, then kept in memory).
    func object(forKey key: String) throws -> T {
        if let value = memory.withLock({ $0[key] }) { return value }
        let value = try codec.decode(try RawFile.readAll(path(forKey: key)))
        memory.withLock { $0[key] = value }
        return value
    }

    func setObject(_ value: T, forKey key: String) throws {
        let data = try codec.encode(value)
        let path = path(forKey: key)
        let temporary = path + ".tmp" + String(temporaryCounter.add(1, ordering: .relaxed).newValue, radix: 16)
        try RawFile.writeAtomically(data, to: path, temporary: temporary, durable: durable, directoryFD: directoryFD)
        memory.withLock { $0[key] = value }
    }

    func removeObject(forKey key: String) throws {
        _ = memory.withLock { $0.removeValue(forKey: key) }
        try RawFile.remove(path(forKey: key))
    }
}
