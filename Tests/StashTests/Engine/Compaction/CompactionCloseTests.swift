#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Foundation
import StashTestSupport
import Testing
@testable import Stash
@testable import StashEngine

/// A background compaction copies off the queue and hands its result back to the queue
/// (``DiskStore/schedule``). Its storage may be released between the two: the release must close the
/// store when it returns all the same (Contract item 11, `releasingClosesEngine`: the engine gone, the
/// folder's lock free, the key directory written), as a close during the copy does. A finish that
/// never ran loses nothing: the next open drops its unpublished outputs and reads the inputs.
@Suite("A background compaction and its store's close")
struct CompactionCloseTests {
    /// Found flaky in `KeyDirectoryTests.everyWritePathThroughTheDirectory`: a finish waiting on the
    /// queue held the engine, so the store was closed later, on the queue's thread, and a read-only open
    /// right after the release found no directory from that close.
    @Test("a storage released while its compaction's finish waits on the queue is closed when its release returns, and loses nothing")
    func releaseWithFinishQueuedClosesAtOnce() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let directoryFile = path + "/" + StoreFolder.directoryName
        let gate = DispatchSemaphore(value: 0)
        try withEngineThresholds(in: path, compactionMinimum: 1, directoryMinimum: 1) {
            weak var engine: DiskEngine?
            do {
                let storage = try openDataStore(path)
                engine = storage.engine
                try storage.setObject(Data("x".utf8), forKey: "o") // a shorter record than each of "k"
                let scheduled = DispatchSemaphore(value: 0)
                storage.engine.sync { store in
                    let schedule = store.schedule
                    store.schedule = { work in
                        schedule(work)
                        scheduled.signal()
                    }
                }
                let blocked = DispatchSemaphore(value: 0)
                storage.engine.queue.async { // holds the queue (not the engine, nor the turn) until the end
                    blocked.signal()
                    gate.wait()
                }
                blocked.wait()
                // Dead bytes outweigh live ones only at the third write of "k" (after the second, one of
                // its two records is dead: exactly half), so the compaction starts in the last call made
                // here: no later call waits on the held queue behind its finish.
                for index in 1...3 { try storage.setObject(Data("value \(index)".utf8), forKey: "k") }
                try #require(storage.engine.store.isCompacting)
                try #require(scheduled.wait(timeout: .now() + 120) == .success, "the copy never handed its result back")
            }
            let released = engine == nil
            let wroteDirectory = FileManager.default.fileExists(atPath: directoryFile)
            let fd = open(path, O_RDONLY | O_DIRECTORY)
            let lockFree = flock(fd, LOCK_EX | LOCK_NB) == 0
            close(fd)
            gate.signal()
            #expect(released, "released, not closed: the finish waiting on the queue keeps the engine")
            #expect(wroteDirectory, "no key directory from the close")
            #expect(lockFree, "the folder's lock is still held")

            let reopened = try openDataStore(path)
            #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
            #expect(try reopened.object(forKey: "k") == Data("value 3".utf8))
            #expect(try reopened.object(forKey: "o") == Data("x".utf8))
            #expect(Set(reopened.allKeys) == ["k", "o"])
            let leftovers = (try FileManager.default.contentsOfDirectory(atPath: path)).filter { $0.hasSuffix(SegmentFile.unpublishedSuffix) }
            #expect(leftovers.isEmpty, "unpublished outputs left after the next open: \(leftovers)")
        }
    }

    /// The other side: a housekeeping block already running when the last storage is released (a
    /// compaction's finish, access records) finishes first, and the release closes the store once it
    /// has, before it returns; not the block's thread later.
    @Test("a storage released while a housekeeping block runs is closed after the block and before its release returns")
    func releaseDuringBlockClosesAfterIt() throws {
        let directory = TemporaryDirectory()
        let path = directory.storePath()
        let directoryFile = path + "/" + StoreFolder.directoryName
        try withEngineThresholds(in: path, directoryMinimum: 1) {
            let holder = StorageHolder(try openDataStore(path))
            try holder.storage?.setObject(Data("v".utf8), forKey: "k")
            let storeTurn = try #require(holder.storage?.engine.storeTurn)
            let running = DispatchSemaphore(value: 0)
            let openWhileRunning = Locked<Bool?>(nil)
            holder.storage?.engine.asyncUnlessClosed { _ in
                running.signal()
                // Until the release on the other thread asks for the close (it then waits for this block);
                // bounded, so that a release that never asks fails the test instead of hanging it.
                let deadline = Date().addingTimeInterval(120)
                while storeTurn.closeRequests.value == 0, Date() < deadline { sched_yield() }
                openWhileRunning.withLock { $0 = !FileManager.default.fileExists(atPath: directoryFile) }
            }
            running.wait()
            let released = DispatchSemaphore(value: 0)
            let closedAtReturn = Locked<(directory: Bool, lockFree: Bool)?>(nil)
            DispatchQueue.global().async {
                holder.storage = nil // the last storage: released on this thread
                let fd = open(path, O_RDONLY | O_DIRECTORY)
                let lockFree = flock(fd, LOCK_EX | LOCK_NB) == 0
                close(fd)
                closedAtReturn.withLock { $0 = (FileManager.default.fileExists(atPath: directoryFile), lockFree) }
                released.signal()
            }
            released.wait()
            #expect(openWhileRunning.withLock { $0 } == true, "the store was closed under the running block")
            let closed = closedAtReturn.withLock { $0 }
            #expect(closed?.directory == true, "no key directory from the close when the release returned")
            #expect(closed?.lockFree == true, "the folder's lock still held when the release returned")
        }
    }
}

/// The one reference to a storage, released on another thread.
private final class StorageHolder: @unchecked Sendable {
    // @unchecked Sendable: set once, then cleared by one thread while the test waits for it.
    var storage: DiskStorage<Data>?

    init(_ storage: DiskStorage<Data>) {
        self.storage = storage
    }
}
