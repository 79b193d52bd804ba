import Dispatch
import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// What reads off the queue leave for the queue to do (their access records) never keeps the store
/// open after its last storage is released.
@Suite("Reads off the queue and the store's close")
struct OffQueueCloseTests {
    /// Every 256th read off the queue asks the queue to write the access records waiting; a storage
    /// released before the queue came to it must be closed when its release returns all the same
    /// (its folder's lock let go, its key directory written), not later on the queue's thread.
    @Test("a store whose reads asked the queue to write their access records is closed when its release returns")
    func releaseAfterReadsClosesAtOnce() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let directoryFile = path + "/" + StoreFolder.directoryName
        let gate = DispatchSemaphore(value: 0)
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            do {
                let storage = try openDataStore(path)
                try storage.setObject(Data("v".utf8), forKey: "k")
                let blocked = DispatchSemaphore(value: 0)
                storage.engine.queue.async { // holds the queue (and not the engine) until the end
                    blocked.signal()
                    gate.wait()
                }
                blocked.wait()
                for _ in 0..<SegmentLog.offQueueAccessLimit { _ = try storage.object(forKey: "k") }
            }
            let closed = FileManager.default.fileExists(atPath: directoryFile)
            gate.signal()
            #expect(closed, "released, not closed")
        }
    }
}
