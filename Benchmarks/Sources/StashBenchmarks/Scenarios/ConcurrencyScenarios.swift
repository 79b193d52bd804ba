import Foundation
import Stash

/// The asynchronous API's throughput, and two threads against one.
enum ConcurrencyScenarios {
    /// A batch of memory-hit reads submitted through completion handlers, then waited for;
    /// against the same plumbing over the min store (``AsyncFloor``).
    static func completion(_ pair: Pair<Payload>, bench: Bench, label: String) throws {
        let (stash, keys) = (pair.stash, pair.keys)
        let floor = AsyncFloor(store: pair.min)
        let chunks = Fixtures.shuffled(keys.count, seed: 6).chunked(bench.settings.asyncBatch)
        func batch(_ round: Int, _ submit: (String, @escaping @Sendable (Result<Payload, any Error>) -> Void) -> Void) throws -> Double {
            let failures = Shared(0)
            let group = DispatchGroup()
            let chunk = chunks[round % chunks.count]
            let ns = Measure.nsPerOp(chunk.count) {
                for index in chunk {
                    group.enter()
                    submit(keys[index]) { result in
                        if case .failure = result { failures.update { $0 += 1 } }
                        group.leave()
                    }
                }
                group.wait()
            }
            guard failures.get() == 0 else { throw BenchError("\(label): \(failures.get()) reads failed") }
            return ns
        }
        let samples = try Measure.interleaved(rounds: bench.settings.asyncRounds, [
            { round in try batch(round) { stash.async.object(forKey: $0, completion: $1) } },
            { round in try batch(round) { floor.object(forKey: $0, completion: $1) } },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store + queue"))
    }

    /// The same reads, one `await` after another from one task.
    static func asyncAwait(_ pair: Pair<Payload>, bench: Bench, label: String) throws {
        let (stash, keys) = (pair.stash, pair.keys)
        let floor = AsyncFloor(store: pair.min)
        let chunks = Fixtures.shuffled(keys.count, seed: 7).chunked(bench.settings.asyncBatch).map(Array.init)
        func batch(_ round: Int, _ read: @escaping @Sendable (String) async throws -> Payload) throws -> Double {
            let chunk = chunks[round % chunks.count]
            return try Measure.blocking {
                let start = ContinuousClock.now
                for index in chunk { consume(try await read(keys[index]).id) }
                return (ContinuousClock.now - start).nanoseconds / Double(chunk.count)
            }
        }
        let samples = try Measure.interleaved(rounds: bench.settings.asyncRounds, [
            { round in try batch(round) { try await stash.async.object(forKey: $0) } },
            { round in try batch(round) { try await floor.object(forKey: $0) } },
        ])
        bench.add(Row(label, stash: samples[0], baseline: samples[1], vs: "min store + queue"))
    }

    /// 80% reads and 20% overwrites of random keys, for a fixed time, on 1 and on 2 threads.
    /// Reported as wall time ÷ operations of all threads (ns/op): 2 threads are at least as fast as
    /// one when the first row's ratio is ≤ 1.
    static func mixed(_ pair: Pair<Payload>, bench: Bench, label: String) throws {
        let (stash, min, keys) = (pair.stash, pair.min, pair.keys)
        let values = keys.indices.map { Payload.make($0, revision: 2) }
        let seconds = bench.settings.threadSeconds
        let stashOps = Operations(read: { try stash.object(forKey: keys[$0]).id },
                                  write: { try stash.setObject(values[$0], forKey: keys[$0]) })
        let minOps = Operations(read: { try min.object(forKey: keys[$0]).id },
                                write: { try min.setObject(values[$0], forKey: keys[$0]) })
        let samples = try Measure.interleaved(rounds: bench.settings.threadRounds, [
            { round in try run(stashOps, threads: 1, seconds: seconds, keyCount: keys.count, seed: UInt64(round)) },
            { round in try run(stashOps, threads: 2, seconds: seconds, keyCount: keys.count, seed: UInt64(round)) },
            { round in try run(minOps, threads: 1, seconds: seconds, keyCount: keys.count, seed: UInt64(round)) },
            { round in try run(minOps, threads: 2, seconds: seconds, keyCount: keys.count, seed: UInt64(round)) },
        ])
        bench.add(Row(label + " vs 1 thread (Stash)", stash: samples[1], baseline: samples[0], vs: "Stash, 1 thread",
                      target: .ratio(1.0)))
        bench.add(Row(label.replacingOccurrences(of: "2 threads", with: "1 thread"), stash: samples[0], baseline: samples[2],
                      vs: "min store"))
        bench.add(Row(label, stash: samples[1], baseline: samples[3], vs: "min store"))
    }

    struct Operations: Sendable {
        var read: @Sendable (Int) throws -> Int
        var write: @Sendable (Int) throws -> Void
    }

    /// Runs the mix on `threads` threads until the time is up; returns wall ns ÷ total operations.
    static func run(_ operations: Operations, threads: Int, seconds: Double, keyCount: Int, seed: UInt64) throws -> Double {
        let totals = Shared((operations: 0, checksum: 0, failure: String?.none))
        let start = ContinuousClock.now
        let deadline = start + .nanoseconds(Int64(seconds * 1e9))
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var generator = SplitMix64(seed: seed &* 1_000 &+ UInt64(thread))
            var (count, checksum) = (0, 0)
            do {
                // The clock is read every 8 operations: a read of it costs as much as a memory hit.
                while count % 8 != 0 || ContinuousClock.now < deadline {
                    let random = generator.next()
                    let key = Int(random % UInt64(keyCount))
                    if (random >> 40) % 5 == 0 { try operations.write(key) } else { checksum &+= try operations.read(key) }
                    count += 1
                }
            } catch {
                totals.update { $0.failure = "\(error)" }
            }
            totals.update { [count, checksum] in
                $0.operations += count
                $0.checksum &+= checksum
            }
        }
        let elapsed = ContinuousClock.now - start
        let result = totals.get()
        consume(result.checksum)
        if let failure = result.failure { throw BenchError("80/20 mix: \(failure)") }
        return elapsed.nanoseconds / Double(result.operations)
    }
}
