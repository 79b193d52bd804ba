import Foundation
import Testing
@testable import Stash

#if DEBUG
private let isDebugBuild = true
#else
private let isDebugBuild = false
#endif

/// Debug builds check the thread discipline of Docs/Architecture.md ("Threads and queues"; Contract
/// item 4): the disk engine's entry points trap when called off the store's queue, and nested locks
/// trap when taken out of order. Each violation runs in a child process (an exit test), which must die.
/// (Not named "Concurrency…", so `.ci/run`'s ThreadSanitizer filter leaves these child processes out.)
@Suite("Debug-build concurrency checks", .enabled(if: isDebugBuild, "the checks are compiled into debug builds only"))
struct DebugCheckTests {
    // Contract 4: an engine entry point called off the store's queue stops a debug build.
    @Test("a disk store read off its engine's queue traps in a debug build")
    func offQueueReadTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let directory = TemporaryDirectory()
            let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            try storage.setObject(Data("v".utf8), forKey: "k")
            let store = storage.engine.sync { $0 } // smuggled off the queue: what the check is for
            _ = try store.read("k", now: Date())
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("DiskStore.read(_:now:) called off its engine's queue"), "stderr: \(message)")
    }

    @Test("the same read on the queue passes the check")
    func onQueueReadPasses() throws {
        let directory = TemporaryDirectory()
        let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
        try storage.setObject(Data("v".utf8), forKey: "k")
        #expect(try storage.engine.sync { try $0.read("k", now: Date()).data } == Data("v".utf8))
    }

    @Test("taking the engine registry while holding a store's index traps in a debug build (lock order)")
    func lockOrderViolationTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let directory = TemporaryDirectory()
            let storage = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forData())
            try storage.engine.sync { store in
                try store.withIndex { _ in
                    _ = try DiskEngine.open(directory.url.appendingPathComponent("other"))
                }
            }
        }
        let message = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(message.contains("lock order violated: engineRegistry taken while holding storeIndex"), "stderr: \(message)")
    }
}
