import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Held-out attacks on the disk engine v4: a full disk inside sessions checked against a model, and
/// under a size limit.
@Suite("A full disk inside sessions against a model", .serialized)
struct FullDiskSessionTests: HeldOutSessionScenario {
    /// A store on a small file system filled to its last page by another file: writes (small, and large
    /// ones kept in files of their own), removals, compactions, the key directory kept as the session
    /// goes, closes that write a directory or a uses file, all on the full disk, against a model. A write
    /// that fails throws "no space" and changes nothing; once space is back the store agrees with the
    /// model, in the session and after a reopen.
    @Test("a full disk inside sessions against a model: failed writes throw and change nothing, compactions and directory writes on the full disk lose nothing, and the store agrees with the model once space is back and after a reopen",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: [61, 62] as [UInt64])
    func fullDiskInsideSessions(seed: UInt64) throws {
        try FullDiskTests.withMountedTmpfs(size: "6m") { mountPoint in
            let path = mountPoint + "/store"
            var random = SeededGenerator(seed: seed)
            let keys = (0..<500).map { "f\($0)" } + ["caf\u{E9}", "", "a/b"]
            var model: Values = [:]
            var version = 0
            func newValue(_ key: String) -> Data {
                version += 1
                let size = random.below(15) == 0 ? 70_000 + random.below(3_000) : 50 + random.below(1_500)
                var data = Data("\(key)#\(version)|".utf8)
                data.append(Data(repeating: UInt8(truncatingIfNeeded: version), count: size))
                return data
            }
            var failures = 0
            var successesWhileFull = 0
            /// One random change, on a disk that may be full: what it did must be all or nothing.
            func step(_ storage: DiskStorage<Data>, _ comment: String) throws {
                let key = keys[random.below(keys.count)]
                let choice = random.below(100)
                do {
                    switch choice {
                    case 0..<70:
                        let data = newValue(key)
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                    case 70..<88:
                        try storage.removeObject(forKey: key)
                        model[key] = nil
                    case 88..<96:
                        #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key)")
                    case 96..<99:
                        try storage.compactNow()
                    default:
                        if random.below(4) == 0 {
                            try storage.removeAll()
                            model = [:]
                        }
                    }
                    successesWhileFull += 1
                } catch {
                    failures += 1
                    #expect(Self.isNoSpace(error), "\(comment): step \(choice) on \(key) threw \(error)")
                    // Nothing changed: the key reads as before.
                    let got = try? Self.read(storage, key)
                    #expect(got == model[key], "\(comment): \(key) after a failed step \(choice): \(got.map { "\($0.count) bytes" } ?? "missing"), model \(model[key].map { "\($0.count) bytes" } ?? "missing")")
                }
            }
            try withEngineThresholds(in: path, compactionMinimum: 16 << 10, directoryMinimum: 1, segmentLimit: 64 << 10,
                                     directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
                do {
                    let storage = try openDataStore(path)
                    for key in keys.prefix(300) {
                        let data = newValue(key)
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                    }
                }
                for session in 0..<5 {
                    let comment = "seed \(seed) session \(session)"
                    do {
                        let storage = try openDataStore(path)
                        try Self.expectAgrees(storage, model, keys, "\(comment) at open")
                        // A few writes with room (the directory starts being kept), then the disk fills.
                        if session == 3 {
                            // Reads alone: the close writes a key uses file (over one made ready) on the full disk.
                            try FullDiskTests.fill(mountPoint, leaving: 0)
                            for key in keys { #expect(try Self.read(storage, key) == model[key], "\(comment): read of \(key) on the full disk") }
                        } else {
                            for _ in 0..<30 { try step(storage, "\(comment) with room") }
                            try FullDiskTests.fill(mountPoint, leaving: session.isMultiple(of: 2) ? 0 : 40_000)
                            for number in 0..<150 { try step(storage, "\(comment) full, step \(number)") }
                        }
                        try Self.expectAgrees(storage, model, keys, "\(comment) on the full disk")
                        if session.isMultiple(of: 2) {
                            // Space comes back in the session.
                            try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                            try Self.expectAgrees(storage, model, keys, "\(comment) once space is back")
                            for number in 0..<60 { try step(storage, "\(comment) with room again, step \(number)") }
                            try Self.expectAgrees(storage, model, keys, "\(comment) after writes with room again")
                            try FullDiskTests.fill(mountPoint, leaving: 0)
                        }
                        // The close writes its directory (or uses file) on the full disk.
                    }
                    do {
                        // Opened on the full disk.
                        let storage = try openDataStore(path)
                        try Self.expectAgrees(storage, model, keys, "\(comment) reopened on the full disk")
                    }
                    try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                    let storage = try openDataStore(path)
                    try Self.expectAgrees(storage, model, keys, "\(comment) reopened with room")
                    #expect(Self.strayFiles(path).isEmpty, "\(comment): \(Self.strayFiles(path))")
                }
                #expect(failures > 0, "no step failed on the full disk")
            }
        }
    }

    /// A store with `maxSize`, at its limit, on a full disk: a write that needs others evicted and fails
    /// for want of space throws and evicts nothing (Contract item 5's eviction happens for a write that
    /// is stored); once space is back the store agrees with the model, in the session and after a reopen.
    @Test("a write that would evict others under maxSize but fails on a full disk throws and evicts nothing",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: [2_000, 30_000, 90_000])
    func fullDiskUnderASizeLimit(valueSize: Int) throws {
        try FullDiskTests.withMountedTmpfs(size: "4m") { mountPoint in
            let path = mountPoint + "/store"
            let limit = valueSize * 12
            var model: Values = [:]
            var order: [String] = []
            try withEngineThresholds(in: path, directoryMinimum: 1, directoryBuilderMinimum: 16, keptDirectoryCapacity: 16, preparedUsesMinimum: 0) {
                let storage = try openDataStore(path, maxSize: limit)
                for number in 0..<12 {
                    let key = "m\(number)"
                    let data = Self.value(key, length: valueSize - number)
                    try storage.setObject(data, forKey: key)
                    model[key] = data
                    order.append(key)
                }
                try #require(Set(storage.allKeys) == Set(model.keys), "the store was not filled to its limit: \(storage.allKeys.sorted())")
                try FullDiskTests.fill(mountPoint, leaving: 0)
                var failures = 0
                for number in 0..<40 {
                    let key = "n\(number)"
                    let data = Self.value(key, length: valueSize + 1 + number)
                    do {
                        try storage.setObject(data, forKey: key)
                        model[key] = data
                        order.append(key)
                        // Stored: the least recently used went, as many as the limit asks.
                        var total = model.values.reduce(0) { $0 + $1.count }
                        while total > limit, let first = order.first {
                            total -= model[first]?.count ?? 0
                            model[first] = nil
                            order.removeFirst()
                        }
                    } catch {
                        failures += 1
                        #expect(Self.isNoSpace(error), "write of \(key): \(error)")
                    }
                    #expect(Set(storage.allKeys) == Set(model.keys), "after the write of \(key): extra \(Set(storage.allKeys).subtracting(model.keys).sorted()), missing \(Set(model.keys).subtracting(storage.allKeys).sorted())")
                }
                #expect(failures > 0, "no write failed on the full disk")
                try FileManager.default.removeItem(atPath: mountPoint + "/filler")
                try Self.expectAgrees(storage, model, Array(model.keys) + (0..<12).map { "m\($0)" }, "once space is back")
            }
            try withEngineThresholds(in: path, directoryMinimum: 1) {
                let reopened = try openDataStore(path, maxSize: limit)
                try Self.expectAgrees(reopened, model, Array(model.keys) + (0..<12).map { "m\($0)" } + (0..<40).map { "n\($0)" }, "after a reopen")
            }
        }
    }
}
