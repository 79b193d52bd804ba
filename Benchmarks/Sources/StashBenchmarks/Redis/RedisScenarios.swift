import Foundation
import Stash
import StashRedis

/// `--redis`: StashRedis against its floors, on a redis-server of its own (outside CI's quick run).
///
/// - Redis hit and set of 200-byte values against a raw GET/SET of the same bytes on one blocking
///   connection, one round trip per call (the floor of a call that waits for its reply), and, for
///   reference, against the same commands pipelined 16 deep.
/// - The near cache's memory hit against the disk `Storage`'s memory hit.
/// - Two clients (threads, each with its own store and connections) against two raw connections.
/// - `redis-benchmark`'s own figures on the same server, for reference.
enum RedisScenarios {
    static let valueSize = 200
    static let depth = 16

    static func run(_ bench: Bench) throws {
        print("== Redis")
        guard let server = try RedisServerProcess(in: try bench.freshDirectory("redis")) else { return }
        let settings = bench.settings
        let keyCount = settings.quick ? 1_000 : 5_000
        let rounds = settings.quick ? 3 : 9
        let keys = (0..<keyCount).map(Fixtures.key)
        let config = RedisConfiguration(port: server.port)
        let value = Data(Fixtures.data.prefix(valueSize))

        // MARK: Set and hit against the raw floor
        let store = try RedisStorage(configuration: config, namespace: "bench", transformer: TransformerFactory.forData())
        let raw = try RawRedis(port: server.port)
        let setCommands = keys.map { RawRedis.encode([Data("SET".utf8), Data(store.redisKey($0).utf8), value]) }
        let getCommands = keys.map { RawRedis.encode([Data("GET".utf8), Data(store.redisKey($0).utf8)]) }
        let getReply = "$\(valueSize)\r\n".utf8.count + valueSize + 2
        let set = try Measure.interleaved(rounds: rounds, [
            { _ in try Measure.nsPerOp(keyCount) { for key in keys { try store.setObject(value, forKey: key) } } },
            { _ in try Measure.nsPerOp(keyCount) { for command in setCommands { try raw.call(command, replyBytes: 5) } } },
            { _ in try Measure.nsPerOp(keyCount) { try pipelined(raw, setCommands, replyBytes: 5) } },
        ])
        bench.add(Row("Redis set, 200 B", stash: set[0], baseline: set[1], vs: "raw SET, 1 connection", target: .ratio(1.3)))
        bench.add(Row("Redis set, 200 B (vs pipelined)", stash: set[0], baseline: set[2], vs: "raw SET, \(depth) deep"))
        let hit = try Measure.interleaved(rounds: rounds, [
            { _ in try Measure.nsPerOp(keyCount) { for key in keys { consume(try store.object(forKey: key).count) } } },
            { _ in try Measure.nsPerOp(keyCount) { for command in getCommands { try raw.call(command, replyBytes: getReply) } } },
            { _ in try Measure.nsPerOp(keyCount) { try pipelined(raw, getCommands, replyBytes: getReply) } },
        ])
        bench.add(Row("Redis hit, 200 B", stash: hit[0], baseline: hit[1], vs: "raw GET, 1 connection", target: .ratio(1.3)))
        bench.add(Row("Redis hit, 200 B (vs pipelined)", stash: hit[0], baseline: hit[2], vs: "raw GET, \(depth) deep"))

        // MARK: Two clients
        let stores = try (0..<2).map { _ in
            try RedisStorage(configuration: config, namespace: "bench", transformer: TransformerFactory.forData())
        }
        let raws = try (0..<2).map { _ in try RawRedis(port: server.port) }
        let two = try Measure.interleaved(rounds: rounds, [
            { _ in try twoThreads(keyCount) { side in for key in keys { consume(try stores[side].object(forKey: key).count) } } },
            { _ in try twoThreads(keyCount) { side in for command in getCommands { try raws[side].call(command, replyBytes: getReply) } } },
        ])
        bench.add(Row("Redis hit, 2 clients (per op, both together)", stash: two[0], baseline: two[1], vs: "2 raw connections"))
        // Two callers of one store's async API, each waiting for its reply: they must not be serialised.
        let shared = stores[0].async
        let twoAsync = try Measure.interleaved(rounds: rounds, [
            { _ in try twoThreads(keyCount) { _ in
                let replied = DispatchSemaphore(value: 0)
                for key in keys {
                    shared.object(forKey: key) { consume((try? $0.get())?.count ?? 0); replied.signal() }
                    replied.wait()
                }
            } },
            { _ in try twoThreads(keyCount) { side in for command in getCommands { try raws[side].call(command, replyBytes: getReply) } } },
        ])
        bench.add(Row("Redis async hit, 2 callers of one store (per op, both together)", stash: twoAsync[0], baseline: twoAsync[1],
                      vs: "2 raw connections"))

        // MARK: Near cache memory hit against the disk Storage's
        try nearCacheHit(bench, config: config, keys: keys, rounds: rounds)

        // MARK: The invalidation window
        try invalidationWindow(config: config, samples: settings.quick ? 200 : 2_000)

        // MARK: redis-benchmark
        for (clients, pipeline) in [(1, 1), (2, 1), (1, depth)] {
            let rates = try server.redisBenchmark(tests: "get,set", clients: clients, pipeline: pipeline, size: valueSize,
                                                  requests: settings.quick ? 20_000 : 100_000)
            for (test, rate) in rates.sorted(by: { $0.key < $1.key }) {
                print("  redis-benchmark \(test), \(clients) client(s), pipeline \(pipeline): \(Int(rate)) requests/s = "
                    + Row.format(1e9 / rate, .ns) + " per op")
            }
        }
    }

    /// The disk `Storage`'s memory hit and the near cache's, same codable values, same keys.
    private static func nearCacheHit(_ bench: Bench, config: RedisConfiguration, keys: [String], rounds: Int) throws {
        let kind = Kind<Payload>.codable
        let writer = try RedisStorage(configuration: config, namespace: "near", transformer: kind.transformer)
        let disk = try Storage(diskConfig: DiskConfig(name: "disk", directory: try bench.freshDirectory("redis-disk")),
                               memoryConfig: MemoryConfig(), transformer: kind.transformer)
        for (index, key) in keys.enumerated() {
            try writer.setObject(kind.value(index, 0), forKey: key)
            try disk.setObject(kind.value(index, 0), forKey: key)
        }
        // The near cache starts tracking after the writes: no invalidation of them can arrive during
        // the measurement and turn hits into round trips.
        let near = try RedisHybridStorage(configuration: config, namespace: "near", transformer: kind.transformer)
        while !near.isMemoryCoherent { usleep(1_000) }
        for key in keys { consume(try near.object(forKey: key).id) }
        guard near.memoryStorage.count == keys.count else { throw BenchError("the near cache did not keep every value") }
        let order = Fixtures.shuffled(keys.count, seed: 5)
        let samples = try Measure.interleaved(rounds: rounds * 2, [
            { _ in try Measure.nsPerOp(order.count) { for index in order { consume(try near.object(forKey: keys[index]).id) } } },
            { _ in try Measure.nsPerOp(order.count) { for index in order { consume(try disk.object(forKey: keys[index]).id) } } },
        ])
        guard near.memoryStorage.count == keys.count else { throw BenchError("the near cache lost values while measured") }
        bench.add(Row("near-cache memory hit, codable", stash: samples[0], baseline: samples[1], vs: "disk Storage memory hit",
                      target: .ratio(1.5)))
    }

    /// From another client's write returning to this near cache's memory dropping the old copy:
    /// the write returns, then this thread spins on the memory layer until the copy is gone.
    private static func invalidationWindow(config: RedisConfiguration, samples: Int) throws {
        let near = try RedisHybridStorage(configuration: config, namespace: "window", transformer: TransformerFactory.forData())
        let writer = try RedisStorage(configuration: config, namespace: "window", transformer: TransformerFactory.forData())
        while !near.isMemoryCoherent { usleep(1_000) }
        var windows: [Double] = []
        for sample in 0..<samples {
            try writer.setObject(Data([UInt8(truncatingIfNeeded: sample)]), forKey: "k")
            // Cached once the invalidation of the write above has passed.
            var attempts = 0
            while (try? near.memoryStorage.entry(forKey: "k")) == nil {
                consume(try near.object(forKey: "k").count)
                attempts += 1
                if attempts > 100_000 { throw BenchError("the near cache never kept the value") }
            }
            try writer.setObject(Data([1, UInt8(truncatingIfNeeded: sample)]), forKey: "k")
            let returned = ContinuousClock.now
            while (try? near.memoryStorage.entry(forKey: "k")) != nil {}
            windows.append((ContinuousClock.now - returned).nanoseconds)
        }
        windows.sort()
        let percentile = { (p: Double) in windows[min(windows.count - 1, Int(Double(windows.count) * p))] }
        print("  invalidation window over \(samples) writes: median " + Row.format(percentile(0.5), .ns)
            + ", p99 " + Row.format(percentile(0.99), .ns) + ", max " + Row.format(windows.last ?? 0, .ns))
    }

    /// Sends `commands` `depth` at a time, each group in one write.
    private static func pipelined(_ raw: RawRedis, _ commands: [[UInt8]], replyBytes: Int) throws {
        for group in commands.chunked(depth) {
            try raw.call(Array(group.joined()), replyBytes: replyBytes * group.count)
        }
    }

    /// Runs `body(0)` and `body(1)` on two threads at once; nanoseconds per operation of both together.
    private static func twoThreads(_ operationsEach: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws -> Double {
        let failure = Shared<String?>(nil)
        let start = ContinuousClock.now
        DispatchQueue.concurrentPerform(iterations: 2) { side in
            do { try body(side) } catch { failure.set("\(error)") }
        }
        let elapsed = ContinuousClock.now - start
        if let failure = failure.get() { throw BenchError(failure) }
        return elapsed.nanoseconds / Double(operationsEach * 2)
    }
}
