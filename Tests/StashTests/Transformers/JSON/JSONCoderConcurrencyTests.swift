import Foundation
import Testing
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// One coder shared by many threads: each call has its own buffer and cursors (ThreadSanitizer runs
/// this suite in CI).
@Suite("JSON coder: concurrent use")
struct JSONCoderConcurrencyTests {
    @Test("one transformer encodes and decodes on eight threads at once, each value intact")
    func sharedTransformer() throws {
        let transformer = TransformerFactory.forStreamingCodable(ofType: CoderTree.self)
        let failures = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var values = CoderValues(seed: UInt64(100 + thread))
            for _ in 0..<40 {
                let tree = values.tree()
                do {
                    let data = try transformer.encode(tree)
                    // Doubles and reference dates go through JSON exactly: the value comes back equal.
                    if try transformer.decode(data) != tree { failures.withLock { $0 += 1 } }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
    }

    @Test("a store of Codable values read and written from several threads returns what was written")
    func sharedStore() throws {
        let directory = TemporaryDirectory()
        let storage = try Storage<User>(diskConfig: directory.diskConfig(), memoryConfig: MemoryConfig(countLimit: 4),
                                        transformer: TransformerFactory.forStreamingCodable(ofType: User.self))
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<50 {
                let user = User(name: "thread \(thread) \"é\"", age: index)
                try? storage.setObject(user, forKey: "k\(thread)")
                if let read = try? storage.object(forKey: "k\(thread)") { #expect(read.name == user.name) }
            }
        }
        for thread in 0..<4 { #expect(try storage.object(forKey: "k\(thread)") == User(name: "thread \(thread) \"é\"", age: 49)) }
    }
}
