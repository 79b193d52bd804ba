import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Every path that writes a value checks it in one order before anything is written (the front half
/// of a write, `WriteFront`): the storage may write, the key is the app's, the expiry is usable, the
/// transformer makes bytes. A value that fails several checks gets the first one's error, whichever
/// path wrote it. (A transaction's writes check the key before read-only, as they always have.)
@Suite("The checks before a write, in one order on every path")
struct WriteCheckOrderTests {
    private struct Refused: Error {}

    /// A transformer whose encoding always fails.
    private static let failingEncoder = Transformer<Int>(toData: { _ in throw Refused() }, fromData: { _ in 0 })
    private static let reserved = StorageMigrator<Int>.reservedKeyPrefix + "x"
    private static let nan = Expiry.seconds(.nan)

    /// The write paths, each storing `value` for `key` with `expiry` through `storage`.
    static let paths = ["Storage.setObject", "DiskStorage.setObject", "Storage.write(batch)", "DiskStorage.write(batch)",
                        "Storage.update", "DiskStorage.update", "Storage.transaction"]

    private static func write(_ path: String, _ storage: Storage<Int>, key: String, expiry: Expiry?) throws {
        let disk = storage.hybridStorage.diskStorage
        var batch = StorageBatch<Int>()
        batch.setObject(1, forKey: key, expiry: expiry)
        switch path {
        case "Storage.setObject": try storage.setObject(1, forKey: key, expiry: expiry)
        case "DiskStorage.setObject": try disk.setObject(1, forKey: key, expiry: expiry)
        case "Storage.write(batch)": try storage.write(batch)
        case "DiskStorage.write(batch)": try disk.write(batch)
        case "Storage.update": try storage.update(forKey: key, default: 0, expiry: expiry) { $0 += 1 }
        case "DiskStorage.update": try disk.update(forKey: key, default: 0, expiry: expiry) { $0 += 1 }
        default: try storage.transaction { tx in try tx.setObject(1, forKey: key, expiry: expiry) }
        }
    }

    private static func error(of body: () throws -> Void) -> StorageError? {
        do {
            try body()
            return nil
        } catch let error as StorageError {
            return error
        } catch {
            Issue.record("not a StorageError: \(error)")
            return nil
        }
    }

    @Test("a reserved key with an unusable expiry and a failing transformer: reservedKey; then invalidExpiry; then the transformer's error",
          arguments: paths)
    func firstFailingCheckWins(path: String) throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<Int>(diskConfig: directory.diskConfig(), transformer: Self.failingEncoder)
        let first = Self.error { try Self.write(path, storage, key: Self.reserved, expiry: Self.nan) }
        #expect(first == .reservedKey(Self.reserved), "\(path): \(String(describing: first))")
        let second = Self.error { try Self.write(path, storage, key: "k", expiry: Self.nan) }
        guard case .invalidExpiry = second else { // (a NaN expiry equals no other: matched by case)
            Issue.record("\(path): \(String(describing: second))")
            return
        }
        let third = Self.error { try Self.write(path, storage, key: "k", expiry: .seconds(60)) }
        guard case .encodingFailed = third else {
            Issue.record("\(path): \(String(describing: third))")
            return
        }
        #expect(storage.allKeys.isEmpty, "\(path) wrote something")
    }

    @Test("a read-only storage refuses a reserved key with readOnly on every path but a transaction's write (reservedKey first there)",
          arguments: paths)
    func readOnlyComesFirst(path: String) throws {
        let directory = TemporaryDirectory()
        _ = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        var config = directory.diskConfig()
        config.readOnly = true
        let storage = try Storage<Int>(diskConfig: config, transformer: TransformerFactory.forCodable(ofType: Int.self))
        let error = Self.error { try Self.write(path, storage, key: Self.reserved, expiry: Self.nan) }
        let expected: StorageError = path == "Storage.transaction" ? .reservedKey(Self.reserved) : .readOnly(directory: storage.path)
        #expect(error == expected, "\(path): \(String(describing: error))")
    }
}
