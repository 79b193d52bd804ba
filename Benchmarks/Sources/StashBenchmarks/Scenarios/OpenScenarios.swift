import Foundation
import MallocStats
import Stash

/// Opening a store of many entries, and what each entry costs on disk and in memory.
enum OpenScenarios {
    static func run(bench: Bench) throws {
        let counts = bench.settings.openCounts
        let kind = Kind<Payload>.codable
        for count in counts {
            let openLabel = "open + first read, \(count) entries"
            let diskLabel = "disk bytes per entry, \(count) entries"
            let memoryLabel = "index memory per entry, \(count) entries"
            let measuresDisk = count == counts.first && bench.settings.wants(diskLabel)
            let measuresMemory = count == counts.last && bench.settings.wants(memoryLabel)
            guard bench.settings.wants(openLabel) || measuresDisk || measuresMemory else { continue }
            print("== \(count) entries on disk")
            let directory = try bench.freshDirectory("open-\(count)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let minPath = directory.appendingPathComponent("min").path
            try populate(kind, count: count, directory: directory, minPath: minPath)

            if measuresDisk {
                let stash = try RawFile.usage(of: directory.appendingPathComponent("stash").path)
                let min = try RawFile.usage(of: minPath)
                let perEntry = { (bytes: Int) in Double(bytes) / Double(count) }
                bench.add(Row(diskLabel, stash: perEntry(stash.bytes), baseline: perEntry(min.bytes),
                              vs: "value bytes", unit: .bytes))
                bench.add(Row(diskLabel + ", allocated", stash: perEntry(stash.allocated), baseline: perEntry(min.allocated),
                              vs: "value files", unit: .bytes))
            }

            let key = Fixtures.key(count / 2)
            // One open and read first, so one-time costs (Foundation, Dispatch, the first page-in
            // of the journal) are in neither the memory figure nor the first timed round.
            _ = try Pair<Payload>.openStash(kind, in: directory).object(forKey: key)

            if measuresMemory {
                let before = stash_bench_malloc_in_use()
                let storage = try Pair<Payload>.openStash(kind, in: directory)
                let after = stash_bench_malloc_in_use()
                withExtendedLifetime(storage) {}
                // "The key" of the target: what the same keys cost as Swift strings in an array
                // (the 16-byte String in place plus its heap buffer: 19 UTF-8 bytes do not fit inline).
                let keysBefore = stash_bench_malloc_in_use()
                let keys = (0..<count).map(Fixtures.key)
                let keysAfter = stash_bench_malloc_in_use()
                withExtendedLifetime(keys) {}
                bench.add(Row(memoryLabel, stash: Double(after - before) / Double(count),
                              baseline: Double(keysAfter - keysBefore) / Double(count), vs: "the keys as [String]",
                              unit: .bytes, target: .overBaseline(100)))
            }

            if bench.settings.wants(openLabel) {
                // The opened stores are released after the clock stops: closing is not opening.
                var openedStash: Storage<Payload>?
                var openedMin: MinStore<Payload>?
                let samples = try Measure.interleaved(rounds: bench.settings.openRounds, [
                    { _ in
                        defer { openedStash = nil }
                        return try Measure.nsPerOp(1) {
                            openedStash = try Pair<Payload>.openStash(kind, in: directory)
                            consume(try openedStash!.object(forKey: key).id)
                        }
                    },
                    { _ in
                        defer { openedMin = nil }
                        return try Measure.nsPerOp(1) {
                            openedMin = try MinStore(directory: minPath, codec: kind.codec)
                            consume(try openedMin!.object(forKey: key).id)
                        }
                    },
                ])
                bench.add(Row(openLabel, stash: samples[0], baseline: samples[1], vs: "min store", unit: .ns,
                              target: count >= 100_000 ? .absolute(30_000_000) : .none))
            }
        }
    }

    /// `count` entries written through each store, then both closed (Stash's journal is flushed).
    private static func populate(_ kind: Kind<Payload>, count: Int, directory: URL, minPath: String) throws {
        let storage = try Pair<Payload>.openStash(kind, in: directory)
        let min = try MinStore(directory: minPath, codec: kind.codec)
        for index in 0..<count {
            let value = kind.value(index, 0)
            try storage.setObject(value, forKey: Fixtures.key(index))
            try min.setObject(value, forKey: Fixtures.key(index))
        }
    }
}
