import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// A mapping lives as long as a read may copy out of it (``SegmentMapping``): readers on six threads
/// copy records out of mapped segments while a writer rolls a segment every few records and another
/// thread compacts and removes everything, so segments (and their mappings) are retired all the time
/// under the readers. A mapping let go too early faults (the test process ends); a table that names
/// the wrong file gives another key's bytes, and a read that misses a segment just rolled gives an
/// older value than one written before it began. Bounded in steps, not time.
@Suite("Mapped segments retired under readers")
struct MappedSegmentLifetimeTests {
    static func value(_ key: String, _ version: Int) -> Data {
        Data("\(key)|\(version)|".utf8 + [UInt8](repeating: UInt8(version & 0xFF), count: 60 + version % 90))
    }

    /// The version of `key` that `data` is, whole; nil if it is no value of `key`.
    static func version(_ data: Data, of key: String) -> Int? {
        let parts = data.split(separator: UInt8(ascii: "|"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, String(decoding: parts[0], as: UTF8.self) == key,
              let version = Int(String(decoding: parts[1], as: UTF8.self)), data == value(key, version) else { return nil }
        return version
    }

    /// Per key, the last version begun and the last one written with no `removeAll` under way from
    /// its start to its end (one that overlapped a `removeAll` may be gone, or not); how many
    /// `removeAll`s began and ended.
    struct History {
        var started: [String: Int] = [:]
        var committed: [String: Int] = [:]
        var removals = 0
        var removalsEnded = 0
    }

    @Test("readers on 6 threads while segments roll every few records, compactions and removeAll retire them: every answer is a value of the key, not older than the last written before the read, or missing after a removeAll",
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
            let history = Locked(History())
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                switch thread {
                case 0:
                    defer { writesDone.store(1) }
                    for step in 0..<1_500 {
                        let key = keys[step % keys.count]
                        let removals = history.withLock { history in
                            history.started[key] = step
                            return history.removals == history.removalsEnded ? history.removals : -1
                        }
                        do {
                            try store.setObject(Self.value(key, step), forKey: key)
                            history.withLock { history in
                                history.committed[key] = removals == history.removals && removals == history.removalsEnded ? step : nil
                            }
                        } catch {
                            problems.withLock { $0.append("write \(step): \(error)") }
                        }
                    }
                case 1:
                    var round = 0
                    while writesDone.value == 0 && round < 200 {
                        round += 1
                        do {
                            if round % 10 == 0 {
                                history.withLock { $0.removals += 1; $0.committed = [:] }
                                defer { history.withLock { $0.removalsEnded += 1 } }
                                try store.removeAll()
                            } else {
                                try disk.compactNow()
                            }
                        } catch {
                            problems.withLock { $0.append("round \(round): \(error)") }
                        }
                    }
                default:
                    var reads = 0
                    while writesDone.value == 0 || reads < 200 {
                        let key = keys[(reads * 7 + thread) % keys.count]
                        reads += 1
                        let before = history.withLock { $0 }
                        do {
                            let read = try store.object(forKey: key)
                            let after = history.withLock { $0 }
                            guard let version = Self.version(read, of: key) else {
                                problems.withLock { $0.append("\(key): not its value: \(read.prefix(16))") }
                                continue
                            }
                            if version > after.started[key] ?? -1 { problems.withLock { $0.append("\(key): version \(version) not begun") } }
                            if let written = before.committed[key], version < written, after.removals == before.removals {
                                problems.withLock { $0.append("\(key): version \(version) read after \(written) was written") }
                            }
                        } catch StorageError.notFound {
                            let after = history.withLock { $0 }
                            if let written = before.committed[key], after.removals == before.removals {
                                problems.withLock { $0.append("\(key): missing after version \(written) was written") }
                            }
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
                if let read = try? disk.object(forKey: key) { #expect(Self.version(read, of: key) != nil, "\(key) at the end") }
            }
        }
    }
}
