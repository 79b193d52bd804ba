import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// A mapping lives as long as a read may copy out of it (``SegmentMapping``): readers on six threads
/// copy records out of mapped segments while a writer rolls a segment every few records and another
/// thread compacts and removes everything, so segments (and their mappings) are retired all the time
/// under the readers. A mapping let go too early faults (the test process ends); a table that names
/// the wrong file gives another key's bytes. Bounded in steps, not time.
@Suite("Mapped segments retired under readers")
struct MappedSegmentLifetimeTests {
    static func value(_ key: String, _ version: Int) -> Data {
        Data("\(key)|\(version)|".utf8 + [UInt8](repeating: UInt8(version & 0xFF), count: 60 + version % 90))
    }

    /// Whether `data` is a value written for `key` (some version of it, whole).
    static func isValue(_ data: Data, of key: String) -> Bool {
        let parts = data.split(separator: UInt8(ascii: "|"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, String(decoding: parts[0], as: UTF8.self) == key,
              let version = Int(String(decoding: parts[1], as: UTF8.self)) else { return false }
        return data == value(key, version)
    }

    @Test("readers on 6 threads while segments roll every few records, compactions and removeAll retire them: every answer is one of the key's values or missing",
          arguments: [false, true])
    func readersWhileSegmentsAreRetired(throughMemory: Bool) throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, compactionMinimum: 4 << 10, segmentLimit: 2048) {
            let disk = try openDataStore(path)
            let store: any StorageAware<Data> & Sendable = throughMemory
                ? Storage(hybridStorage: HybridStorage(memoryStorage: MemoryStorage<Data>(config: MemoryConfig(countLimit: 4)), diskStorage: disk))
                : disk
            let keys = (0..<16).map { "key \($0)" }
            let problems = Locked<[String]>([])
            let writesDone = AtomicWord()
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                switch thread {
                case 0:
                    defer { writesDone.store(1) }
                    for step in 0..<1_500 {
                        do {
                            try store.setObject(Self.value(keys[step % keys.count], step), forKey: keys[step % keys.count])
                        } catch {
                            problems.withLock { $0.append("write \(step): \(error)") }
                        }
                    }
                case 1:
                    var round = 0
                    while writesDone.value == 0 && round < 200 {
                        round += 1
                        do {
                            if round % 10 == 0 { try store.removeAll() } else { try disk.compactNow() }
                        } catch {
                            problems.withLock { $0.append("round \(round): \(error)") }
                        }
                    }
                default:
                    var reads = 0
                    while writesDone.value == 0 || reads < 200 {
                        let key = keys[(reads * 7 + thread) % keys.count]
                        reads += 1
                        do {
                            let read = try store.object(forKey: key)
                            if !Self.isValue(read, of: key) { problems.withLock { $0.append("\(key): not its value: \(read.prefix(16))") } }
                        } catch StorageError.notFound {
                            // removed by a removeAll, not written again yet
                        } catch {
                            problems.withLock { $0.append("read \(key): \(error)") }
                        }
                    }
                }
            }
            let found = problems.withLock { $0 }
            #expect(found.isEmpty, "\(found.count) problems: \(found.prefix(5))")
            disk.settleCompaction()
            for key in keys {
                if let read = try? disk.object(forKey: key) { #expect(Self.isValue(read, of: key), "\(key) at the end") }
            }
        }
    }
}
