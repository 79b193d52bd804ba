import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

// Contract items 7 and 11: a reader in another process maps the segment a writer appends to (with
// room to grow, by the reader's own segment limit) and reads the writer's later records out of that
// mapping; the writer here rolls a segment every few records, compacts and writes batches, so the
// reader keeps meeting segments it has not mapped yet, segments that outgrew its mapping, and segments
// gone. Each value's length is unique, so the reader's answer (`got KEY BYTES`) names the write.

@Suite("Reads from mapped segments in a reader process", .serialized)
struct MappedReaderProcessTests {
    @Test("a reader process sees every returned write of a writer that rolls a segment every few records, compacts, removes and writes batches")
    func readerFollowsRollingWriter() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        try withEngineThresholds(in: directory.path, compactionMinimum: 8 << 10, segmentLimit: 4096) {
            let writer = try openDataStore(path)
            try writer.setObject(Data("start".utf8), forKey: "start")
            let tool = try #require(builtExecutable(named: "StashTorture"), "StashTorture was not built next to the tests")
            let reader = try ChildProcess(tool, ["follow", path], input: .held)
            let watchdog = Watchdog(reader, seconds: TestDeadline.long)
            defer { watchdog.cancel() }
            #expect(reader.readLine() == "ready", "\(reader.errors)")
            var expected: [String: Int] = [:]
            var random = SeededGenerator(seed: 71)
            for step in 1...300 {
                let key = "k\(random.below(6))"
                switch step {
                case _ where step % 60 == 0:
                    try writer.compactNow()
                case _ where step % 45 == 0:
                    // A batch of 40 values of 2 KiB: past a 4 KiB segment's limit in one append.
                    var batch: [String: Data] = [:]
                    for number in 0..<40 { batch["b\(number)"] = Data(repeating: UInt8(step & 0xFF), count: 2048 + step + number) }
                    try writer.setObjects(batch)
                    for (name, data) in batch { expected[name] = data.count }
                case _ where step % 13 == 0:
                    try writer.removeObject(forKey: key)
                    expected[key] = nil
                default:
                    let size = 100 + step * 3
                    try writer.setObject(Data(repeating: UInt8(step & 0xFF), count: size), forKey: key)
                    expected[key] = size
                }
                // The key just written, and one of the batch's now and then.
                for asked in [key, "b\(step % 40)"] {
                    let answer = reader.ask("get \(asked)")
                    let wanted = expected[asked].map { "got \(asked) \($0)" } ?? "missing \(asked)"
                    #expect(answer == wanted, "step \(step): \(reader.errors)")
                    if answer != wanted { return }
                }
            }
            #expect(writer.engine.store.log.segments.count >= 2)
            reader.closeInput()
            #expect(reader.wait(upTo: TestDeadline.long) && reader.status == 0, "\(reader.errors)")
        }
    }

    @Test("a reader whose segment limit is smaller than the writer's maps the writer's segment with less room than it grows to: records past the reader's mapping read with pread, each one right")
    func writerSegmentOutgrowsReaderMapping() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let size = 100_000 // packed in the segment (below the value-file threshold)
        try withEngineThresholds(in: directory.path, segmentLimit: 8 << 20) {
            let writer = try openDataStore(path)
            try writer.setObject(Data("start".utf8), forKey: "start")
            // Opened with a segment limit of 1 KiB: the writer's active segment is mapped with room
            // for about 1.3 MiB, and the writer fills it to 3 MB.
            let reader = try withEngineThresholds(in: directory.path, segmentLimit: 1024) { try DiskStore(directory: path, readOnly: true) }
            defer { reader.close() }
            for number in 0..<30 {
                let data = Data(repeating: UInt8(number), count: size + number)
                try writer.setObject(data, forKey: "v\(number)")
                reader.sharing.beginOperation(reader)
                let read = try? reader.read("v\(number)", now: now).data
                reader.sharing.endOperation(reader)
                #expect(read == data, "v\(number): \(read?.count ?? -1) bytes")
            }
            let active = try #require(reader.log.segments.values.max { $0.id < $1.id })
            #expect(active.length > (active.mapping?.length ?? .max), "the writer's segment did not outgrow the reader's mapping: \(active.length), \(active.mapping?.length ?? -1)")
            reader.sharing.beginOperation(reader)
            for number in 0..<30 {
                #expect(try reader.read("v\(number)", now: now).data == Data(repeating: UInt8(number), count: size + number))
            }
            reader.sharing.endOperation(reader)
        }
    }
}
