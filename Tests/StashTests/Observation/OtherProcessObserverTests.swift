import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Contract items 11 and 12 across processes: a change another process made reaches this process's
// observers when this process next calls the store (any call: a read, `existsObject`, `allKeys`), in the
// order it was made — for a writer in several processes and for a read-only storage alike, through a
// new segment, a compaction and a `removeAll` of the other process.

@Suite("Observers of another process's changes", .serialized)
struct OtherProcessObserverTests {
    @Test("observers hear of another process's sets, removals and removeAll at this process's next call (a writer in several processes; a read-only storage)",
          arguments: [true, false])
    func observersHearOtherProcess(sharedWriters: Bool) throws {
        let folder = TemporaryDirectory()
        do { _ = try DiskStorage(config: folder.diskConfig(), transformer: TransformerFactory.forData()) } // creates the store
        var config = folder.diskConfig(sharedWriters: sharedWriters)
        config.readOnly = !sharedWriters
        let storage = try Storage(diskConfig: config, memoryConfig: MemoryConfig(countLimit: 10), transformer: TransformerFactory.forData())
        let changes = Recorder<StorageChange>()
        let edits = Recorder<UInt64?>()
        storage.addStorageObserver(changes) { recorder, _, change in recorder.append(change) }
        storage.addObserver(edits, forKey: "k1") { recorder, _, change in
            if case .edit(_, let after) = change { recorder.append(WrittenValue(parsing: after, key: "k1")?.sequence) } else { recorder.append(nil) }
        }
        let other = try ChildProcess(try executable("StashTorture"), ["step", folder.storePath()] + (sharedWriters ? ["--shared"] : []),
                                     input: .held)
        let watchdog = Watchdog(other, seconds: TestDeadline.long)
        defer { watchdog.cancel() }
        #expect(other.readLine() == "ready", "\(other.errors)")
        _ = try storage.existsObject(forKey: "k1") // the other process's open
        storage.waitForObservers()
        let before = changes.received.count

        var expected: [StorageChange] = []
        var expectedEdits: [UInt64?] = []
        var sequence: UInt64 = 0
        var present = Set<String>()
        for step in 1...120 {
            let key = "k\(step % 3)"
            if step % 40 == 0 {
                #expect(other.ask("clear") == "cleared")
                expected.append(.removeAll)
                if present.contains("k1") { expectedEdits.append(nil) }
                present = []
            } else if step % 7 == 0 {
                #expect(other.ask("remove \(key)") == "removed \(key)")
                if present.remove(key) != nil {
                    expected.append(.remove(key: key))
                    if key == "k1" { expectedEdits.append(nil) }
                }
            } else {
                present.insert(key)
                // 60 KB overwrites make the other writer compact; 300 KB values are files of their own.
                let size = step % 11 == 0 ? 300_000 : 60_000
                sequence += 1
                #expect(other.ask("set \(key) \(size)") == "wrote \(key) \(sequence)")
                expected.append(.add(key: key))
                if key == "k1" { expectedEdits.append(sequence) }
            }
            _ = try storage.existsObject(forKey: "unrelated") // any call catches up
            storage.waitForObservers()
            #expect(Array(changes.received.dropFirst(before)) == expected, "step \(step)")
        }
        #expect(edits.received == expectedEdits)
        other.closeInput()
        #expect(other.wait(upTo: TestDeadline.long) && other.status == 0, "\(other.errors)")
    }

    private func executable(_ name: String) throws -> URL {
        try #require(builtExecutable(named: name), "\(name) was not built next to the tests")
    }
}
