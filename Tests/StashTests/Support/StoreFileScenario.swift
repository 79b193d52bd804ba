import Foundation
@testable import Stash
@testable import StashEngine

/// Tests of a store's files (a stray or damaged file, a folder moved or made anew, a crash between
/// two steps) that write through a ``DiskStore`` at a fixed time and read back with nil for a
/// missing or damaged value. A suite adopts it and calls `Self.set`, `Self.value`, `Self.payload`.
protocol StoreFileScenario {}

extension StoreFileScenario {
    static var now: Date { Date(timeIntervalSince1970: 1_800_000_000) }

    static func set(_ store: DiskStore, _ key: String, _ data: Data) throws {
        let outcome = try store.writer.write(key, data, expiry: .distantFuture, now: now, maxSize: 0, durable: false)
        outcome.replaced?.remove()
    }

    /// The value of `key`, or nil if the store does not have it (or it is damaged).
    static func value(_ store: DiskStore, _ key: String) -> Data? {
        try? store.read(key, now: now).data
    }

    static func value(_ storage: DiskStorage<Data>, _ key: String) -> Data? {
        try? storage.object(forKey: key)
    }

    static func payload(_ index: Int) -> Data { Data("value \(index) ".utf8) + Data(repeating: UInt8(index & 0xFF), count: 200) }
}
