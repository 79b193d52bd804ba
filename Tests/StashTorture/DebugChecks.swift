#if DEBUG
import Foundation
@testable import Stash // the engine's internals: what the checks guard is not reachable through the public API
@testable import StashEngine

// `StashTorture debug-check off-queue|lock-order DIR`: breaks one rule of the thread discipline of
// Docs/Architecture.md ("Threads and queues") in a store under DIR, for Tests/StashTests/Engine/Store/DebugCheckTests.swift.
// A debug build must stop at the check (a trap, with its message on standard error); a process that
// gets past it prints `not trapped` and exits 0, which fails the test. Debug builds only: release builds
// have no checks, and no testable import.

func runDebugCheck(_ check: String, _ path: String) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent())
    let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
    switch check {
    case "off-queue":
        try storage.setObject(Data("v".utf8), forKey: "k")
        let store = storage.engine.sync { $0 } // smuggled off the queue: what the check is for
        _ = try store.read("k", now: Date())
    case "lock-order":
        try storage.engine.sync { store in
            try store.withIndex { _ in
                _ = try DiskEngine.open(url.appendingPathComponent("other")) { StoreLayers() }
            }
        }
    default:
        fail("usage: StashTorture debug-check off-queue|lock-order DIR", status: 2)
    }
    emit("not trapped")
    exit(0)
}
#endif
