import Foundation
import Testing
@testable import Stash
@testable import StashEngine

// Read-modify-write under real concurrency: not one update lost (ThreadSanitizer runs this suite).

@Suite("Update concurrency: eight threads of increments lose none")
struct UpdateConcurrencyTests {
    static let threads = 8
    static let increments = 1_000

    private func makeCounter(_ directory: TemporaryDirectory) throws -> Storage<Int> {
        try Storage<Int>(diskConfig: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
    }

    @Test("8 threads × 1,000 synchronous updates of one key leave 8,000")
    func synchronous() throws {
        let directory = TemporaryDirectory()
        let storage = try makeCounter(directory)
        let failures = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
            for _ in 0..<Self.increments {
                do { try storage.update(forKey: "n", default: 0) { $0 += 1 } } catch { failures.append("\(error)") }
            }
        }
        #expect(failures.received.isEmpty)
        #expect(try storage.object(forKey: "n") == Self.threads * Self.increments)
    }

    @Test("8 tasks × 1,000 async/await updates of one key leave 8,000")
    func asyncAwait() async throws {
        let directory = TemporaryDirectory()
        let storage = try makeCounter(directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<Self.threads {
                group.addTask {
                    for _ in 0..<Self.increments { try await storage.async.update(forKey: "n", default: 0) { $0 += 1 } }
                }
            }
            try await group.waitForAll()
        }
        #expect(try storage.object(forKey: "n") == Self.threads * Self.increments)
    }

    @Test("8 threads × 1,000 completion-handler updates of one key leave 8,000")
    func completionHandlers() throws {
        let directory = TemporaryDirectory()
        let storage = try makeCounter(directory)
        let group = DispatchGroup()
        let failures = Recorder<String>()
        DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
            for _ in 0..<Self.increments {
                group.enter()
                storage.async.update(forKey: "n", default: 0, { $0 += 1 }) { result in
                    if case .failure(let error) = result { failures.append("\(error)") }
                    group.leave()
                }
            }
        }
        group.wait()
        #expect(failures.received.isEmpty)
        #expect(try storage.object(forKey: "n") == Self.threads * Self.increments)
    }

    @Test("sync, async and completion updates mixed, through two storages of the folder, leave every increment")
    func mixedAcrossStorages() async throws {
        let directory = TemporaryDirectory()
        let first = try makeCounter(directory)
        let second = try makeCounter(directory)
        let disk = try DiskStorage(config: directory.diskConfig(), transformer: TransformerFactory.forCodable(ofType: Int.self))
        let rounds = 300
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for _ in 0..<rounds { try first.update(forKey: "n", default: 0) { $0 += 1 } } }
            group.addTask { for _ in 0..<rounds { try await second.async.update(forKey: "n", default: 0) { $0 += 1 } } }
            group.addTask { for _ in 0..<rounds { try disk.update(forKey: "n", default: 0) { $0 += 1 } } }
            group.addTask {
                for _ in 0..<rounds {
                    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                        first.async.update(forKey: "n", default: 0, { $0 += 1 }) { continuation.resume(with: $0.map { _ in }) }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try first.object(forKey: "n") == 4 * rounds)
        #expect(try second.object(forKey: "n") == 4 * rounds)
    }

    @Test("8 threads moving amounts between two keys in transactions never change the sum a reader sees")
    func transactionsKeepTheSum() throws {
        let directory = TemporaryDirectory()
        let storage = try makeCounter(directory)
        try storage.setObjects(["a": 500, "b": 500])
        let failures = Recorder<String>()
        let stop = Locked(false)
        let readerDone = DispatchSemaphore(value: 0)
        let reader = Thread {
            defer { readerDone.signal() }
            while !stop.withLock({ $0 }) {
                do {
                    let (a, b) = try storage.transaction { tx in (try tx.object(forKey: "a"), try tx.object(forKey: "b")) }
                    if a + b != 1_000 { failures.append("sum \(a + b)") }
                } catch {
                    failures.append("\(error)")
                }
            }
        }
        reader.start()
        DispatchQueue.concurrentPerform(iterations: Self.threads) { thread in
            for round in 0..<250 {
                let amount = (thread + round) % 7 - 3
                do {
                    try storage.transaction { tx in
                        try tx.update(forKey: "a") { $0 -= amount }
                        try tx.update(forKey: "b") { $0 += amount }
                    }
                } catch {
                    failures.append("\(error)")
                }
            }
        }
        stop.withLock { $0 = true }
        readerDone.wait()
        #expect(failures.received.isEmpty)
        #expect(try storage.object(forKey: "a") + storage.object(forKey: "b") == 1_000)
    }
}
