import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// The format's edges: key and value lengths at the LEB128 and value-file boundaries, the longest key,
/// and the active segment reaching its limit; each round-trips through a reopen, a compaction and a
/// snapshot.
@Suite("Key and value lengths at the format's edges and the segment limit", .serialized)
struct LengthEdgeTests: DiskStoreScenario {
    @Test("keys of 0, 127, 128, 16383, 16384 and 1 MiB bytes, values empty and around 256 KiB: round trip, reopen, compaction, snapshot")
    func lengthEdges() throws {
        let directory = TemporaryDirectory()
        DiskStore.thresholdOverrides.withLock { $0[directory.path] = DiskStore.Thresholds(directoryMinimum: 1) }
        defer { DiskStore.thresholdOverrides.withLock { $0[directory.path] = nil } }
        let path = directory.storePath()
        let keyLengths = [0, 1, 127, 128, 16383, 16384, DiskStore.maxKeyLength]
        let valueLengths = [0, 1, 127, 128, ValueFiles.threshold - 1, ValueFiles.threshold, ValueFiles.threshold + 1]
        var expected: [String: Data] = [:]
        for (index, keyLength) in keyLengths.enumerated() {
            let key = String(repeating: "k", count: keyLength)
            expected[key] = Data(repeating: UInt8(index), count: valueLengths[index])
        }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            for (key, value) in expected { try Self.set(store, key, value) }
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            store.close()
        }
        do {
            let store = try DiskStore(directory: path, readOnly: false) // from the snapshot
            #expect(store.recoveryIssues.isEmpty, "\(store.recoveryIssues)")
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            try store.writer.remove("")
            expected[""] = nil
            try Self.set(store, String(repeating: "k", count: 128), Data()) // inline, empty, over a 127-byte value
            expected[String(repeating: "k", count: 128)] = Data()
            #expect(Self.compactNow(store))
            for (key, value) in expected { #expect(try Self.get(store, key) == value, "key of \(key.utf8.count) bytes") }
            // No close: replay from the compaction's snapshot.
        }
        try FileManager.default.removeItem(atPath: path + "/" + StoreFolder.directoryName)
        let reopened = try DiskStore(directory: path, readOnly: false) // replayed whole
        #expect(Set(reopened.keys) == Set(expected.keys))
        for (key, value) in expected { #expect(try Self.get(reopened, key) == value, "key of \(key.utf8.count) bytes") }
        #expect(throws: StorageError.self) { try Self.set(reopened, String(repeating: "k", count: DiskStore.maxKeyLength + 1), Data()) }
    }

    @Test("the active segment reaching 64 MiB: a new one is started, and everything reads back after a compaction and a reopen")
    func segmentLimit() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let valueSize = ValueFiles.threshold - 1 // the largest inline value
        let count = DiskStore.Thresholds.standard.segmentLimit / valueSize + 8
        func value(_ index: Int) -> Data { Data(repeating: UInt8(truncatingIfNeeded: index), count: valueSize) }
        do {
            let store = try DiskStore(directory: path, readOnly: false)
            let held = HeldCompaction(store) // the removals below start one on their own
            for index in 0..<count { try Self.set(store, "k\(index)", value(index)) }
            #expect(store.log.segments.count >= 2)
            #expect(store.log.segments.values.allSatisfy { $0.length <= DiskStore.Thresholds.standard.segmentLimit + valueSize + 1024 })
            for index in 0..<count where index % 3 != 0 { try store.writer.remove("k\(index)") }
            held.start(store)
            #expect(held.finish(store))
            for index in stride(from: 0, to: count, by: 3) { #expect(try Self.get(store, "k\(index)") == value(index)) }
        }
        let reopened = try DiskStore(directory: path, readOnly: false)
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
        #expect(reopened.keys.count == (count + 2) / 3)
        for index in stride(from: 0, to: count, by: 3) { #expect(try Self.get(reopened, "k\(index)") == value(index)) }
    }
}
