// The child process of the Redis two-process test: a near cache of its own on the server the
// parent names, driven line by line on standard input, answering each line on standard output.
//
//     StashRedisChild PORT NAMESPACE
//     get KEY        -> the value, or "missing", or "error <description>"
//     set KEY VALUE  -> "ok"
//     wait-tracking  -> "tracking" once the invalidation connection is up
// A child process of the tests, run on macOS and Linux only: on the other platforms of the package
// scheme it compiles to nothing (and Redis clients are unavailable on watchOS).
#if os(macOS) || os(Linux)
import Foundation
import Stash
import StashRedis
import StashTestSupport

/// One answer per line, in one write (``writeLine(_:)``), so the parent reads whole answers.
func answer(_ line: String) {
    writeLine(line)
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let port = Int(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: StashRedisChild PORT NAMESPACE\n".utf8))
    exit(2)
}
let store = try RedisHybridStorage<String>(
    configuration: RedisConfiguration(port: port, initialBackoff: 0.01, maximumBackoff: 0.05),
    namespace: arguments[2],
    transformer: Transformer(toData: { Data($0.utf8) }, fromData: { String(decoding: $0, as: UTF8.self) })
)
answer("ready")
while let line = readLine() {
    let words = line.split(separator: " ", maxSplits: 2).map(String.init)
    do {
        switch words.first {
        case "get":
            do { answer(try store.object(forKey: words[1])) } catch StorageError.notFound { answer("missing") }
        case "set":
            try store.setObject(words[2], forKey: words[1])
            answer("ok")
        case "wait-tracking":
            while !store.isMemoryCoherent { usleep(1_000) }
            answer("tracking")
        case "memory":
            answer(String(store.memoryStorage.count))
        default:
            answer("error unknown command")
        }
    } catch {
        answer("error \(error)")
    }
}
#endif
