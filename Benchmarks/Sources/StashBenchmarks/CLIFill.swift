import Foundation
import Stash

/// `StashBenchmarks --fill DIR COUNT [EXPIRED_SHARE]`: writes COUNT entries of 200 bytes into the
/// store folder DIR (the store `stash --dir DIR` opens) through the library, a share of them
/// (default 0.25) already expired, and prints the seconds it took. `Benchmarks/cli-scale` uses it
/// to build the million-entry store it runs the CLI on.
///
/// `StashBenchmarks --fill DIR COUNT --read`: reads those COUNT keys once each instead (what
/// callgrind measures of a read: `--toggle-collect` on `DiskStorage.object(forKey:)`); `--remove`
/// removes them (`DiskStorage.removeObject(forKey:)`).
enum CLIFill {
    static func main(_ arguments: [String]) -> Int32 {
        let reads = arguments.count == 3 && arguments[2] == "--read"
        let removes = arguments.count == 3 && arguments[2] == "--remove"
        guard arguments.count >= 2, let count = Int(arguments[1]), count >= 0,
              let share = arguments.count > 2 && !reads && !removes ? Double(arguments[2]) : 0.25, (0...1).contains(share) else {
            FileHandle.standardError.write(Data("usage: StashBenchmarks --fill DIR COUNT [EXPIRED_SHARE | --read | --remove]\n".utf8))
            return 2
        }
        let folder = URL(fileURLWithPath: arguments[0]).standardizedFileURL
        do {
            // The same configuration as the CLI's `--dir`: the folder is the store itself.
            let storage = try DiskStorage(config: DiskConfig(name: folder.lastPathComponent,
                                                             directory: folder.deletingLastPathComponent()),
                                          transformer: TransformerFactory.forData())
            if reads { return try read(storage, count: count) }
            if removes { return try remove(storage, count: count) }
            let past = Date(timeIntervalSinceNow: -3_600)
            let every = share > 0 ? max(1, Int((1 / share).rounded())) : 0
            let started = ContinuousClock.now
            for index in 0..<count {
                let expired = every > 0 && index % every == 0
                try storage.setObject(Fixtures.small(index, revision: 0), forKey: Fixtures.key(index),
                                      expiry: expired ? .date(past) : nil)
                if index > 0, index % 100_000 == 0 {
                    FileHandle.standardError.write(Data("  \(index) written\n".utf8))
                }
            }
            print(String(format: "%.3f", (ContinuousClock.now - started).nanoseconds / 1e9))
            return 0
        } catch {
            FileHandle.standardError.write(Data("fill failed: \(error)\n".utf8))
            return 1
        }
    }

    /// Removes every key `--fill` wrote, in order; prints the seconds it took.
    private static func remove(_ storage: DiskStorage<Data>, count: Int) throws -> Int32 {
        let started = ContinuousClock.now
        for index in 0..<count { try storage.removeObject(forKey: Fixtures.key(index)) }
        print(String(format: "%.3f", (ContinuousClock.now - started).nanoseconds / 1e9))
        return 0
    }

    /// Reads every key `--fill` wrote once, in order; prints the seconds it took.
    private static func read(_ storage: DiskStorage<Data>, count: Int) throws -> Int32 {
        let started = ContinuousClock.now
        var bytes = 0
        for index in 0..<count { bytes &+= try storage.object(forKey: Fixtures.key(index)).count }
        print(String(format: "%.3f", (ContinuousClock.now - started).nanoseconds / 1e9), bytes)
        return 0
    }
}
