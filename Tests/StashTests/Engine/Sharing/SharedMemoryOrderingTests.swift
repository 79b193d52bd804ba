import Foundation
import Testing
@testable import Stash
@testable import StashEngine
import CStashAtomics // the loads, stores and fences themselves
import StashTestSupport

// Memory ordering between processes (Docs/Architecture.md, "Memory ordering across processes"): a
// writer process publishes a segment's new length in the mapped `stash-shared` file only after the
// record's bytes are written, with release ordering, and a reader loads it with acquire ordering
// before it reads the bytes (C11 atomics, `CStashAtomics`, on every supported OS version). A reader
// that saw a published length before its bytes would read a short or stale record: a checksum failure,
// `StorageError.corrupted`, a recovery issue, or a value that is not a complete one. Bounded in reads
// and in time; a watchdog kills the writer.

@Suite("Shared memory ordering between a writer and a reader process", .serialized)
struct SharedMemoryOrderingTests {
    @Test("the C11 loads, stores and fences keep a value and its byte order")
    func atomicsRoundTrip() {
        var word: UInt64 = 0
        withUnsafeMutableBytes(of: &word) { raw in
            stash_store_release_u64(raw.baseAddress!, 0x0102_0304_0506_0708)
            stash_fence_release()
            stash_fence_acquire()
            #expect(stash_load_acquire_u64(raw.baseAddress!) == 0x0102_0304_0506_0708)
        }
        #expect(word == 0x0102_0304_0506_0708)
    }

    @Test("a reader process never reads a published length before its bytes: every value read is complete")
    func readerNeverSeesLengthBeforeBytes() throws {
        let folder = TemporaryDirectory()
        let torture = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
        // Small values on four keys: every write appends a record to the active segment and publishes its length.
        let writer = try ChildProcess(torture, ["write", folder.storePath(), "--seed", "31", "--max-size", "0", "--keys", "4"])
        let watchdog = Watchdog(writer, seconds: TestDeadline.long)
        defer {
            watchdog.cancel()
            writer.kill()
        }
        #expect(writer.waitForOutput(), "the writer did not start: \(writer.errors)")

        var config = folder.diskConfig()
        config.readOnly = true
        let reader = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        let deadline = Date().addingTimeInterval(20)
        var (reads, found) = (0, 0)
        while reads < 20_000, Date() < deadline, writer.isRunning {
            let key = "k\(reads % 4)"
            reads += 1
            do {
                let value = try reader.object(forKey: key)
                found += 1
                #expect(WrittenValue(parsing: value, key: key) != nil, "read \(reads): \(key) held \(value.count) bytes that are no complete value")
            } catch StorageError.notFound {
                continue // not written yet, or removed
            }
        }
        #expect(writer.isRunning, "the writer stopped: \(writer.errors)")
        #expect(found > 0, "no value was read in \(reads) reads")
        #expect(reader.recoveryIssues.isEmpty, "the reader took a write in progress for damage: \(reader.recoveryIssues)")
    }
}
