import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// What the suites that check a store against a model share (`ModelSessionTests`, `OrderOfUseTests`,
/// `DirectoryFilesReplacedTests`, `ReadSessionTests`, `CompactionStepOrderTests`): values that name
/// their key, a model of values and order of least recent use, and the checks against it.
protocol ModelSessionScenario {}

extension ModelSessionScenario {
    typealias Model = StoreModel
    /// The value written for `key` at `version`: it names its key, so a value of another key is seen.
    static func value(_ key: String, _ version: Int, size: Int) -> Data {
        var data = Data("\(key)#\(version)|".utf8)
        if data.count < size { data.append(Data(repeating: UInt8(truncatingIfNeeded: version &* 31 &+ key.utf8.count), count: size - data.count)) }
        return data
    }

    /// The value stored for `key`, nil if there is none; other errors are thrown.
    static func read(_ storage: DiskStorage<Data>, _ key: String) throws -> Data? {
        do {
            return try storage.object(forKey: key)
        } catch StorageError.notFound {
            return nil
        }
    }

    /// Names in the store folder that are not the store's files (temporary ones included).
    static func strayFiles(_ path: String, allowingUnpublished: Bool = false) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.filter { name in
            !((allowingUnpublished && name.hasSuffix(SegmentFile.unpublishedSuffix)) || SegmentFile.id(ofName: name) != nil || DiskStore.isValueFileName(name) || name == StoreFolder.markerName
              || name == StoreFolder.directoryName || name == StoreFolder.usesName || name == SharedState.name)
        }.sorted()
    }

    /// Checks the store against the model: every value, the keys, and the order of least recent use.
    static func expectMatches(_ storage: DiskStorage<Data>, _ model: inout Model, checkOrder: Bool, _ comment: Comment) throws {
        let infos = storage.entryInfos.map(\.key)
        #expect(Set(storage.allKeys) == Set(model.values.keys), comment)
        if checkOrder { #expect(infos == model.order, comment) }
        // Read in the model's order: the reads keep it.
        for key in model.order {
            let got = try Self.read(storage, key)
            #expect(got == model.values[key], "\(comment): \(key)")
        }
    }
}

/// A model of the store: values, and keys least recently used first.
struct StoreModel {
    var values: [String: Data] = [:]
    var order: [String] = []

    mutating func use(_ key: String) {
        guard values[key] != nil else { return }
        order.removeAll { $0 == key }
        order.append(key)
    }

    mutating func set(_ key: String, _ data: Data) {
        values[key] = data
        use(key)
    }

    mutating func remove(_ key: String) {
        values[key] = nil
        order.removeAll { $0 == key }
    }

    mutating func clear() { self = StoreModel() }

    /// Live value bytes, as `maxSize` counts them.
    var totalSize: Int { values.values.reduce(0) { $0 + $1.count } }

    /// What a trim to `limit` leaves: the least recently used go first until the rest fit.
    mutating func trim(to limit: Int) {
        var total = totalSize
        while total > limit, let first = order.first {
            total -= values[first]?.count ?? 0
            remove(first)
        }
    }

    /// Keeps the keys `kept` (what a trim left): they must be the most recently used, the ones gone the least.
    mutating func trimmed(to kept: Set<String>) -> Bool {
        let gone = order.filter { !kept.contains($0) }
        let isSuffix = order.suffix(kept.count).allSatisfy(kept.contains) && kept.allSatisfy { values[$0] != nil }
        for key in gone { remove(key) }
        return isSuffix
    }
}
