import Foundation
import Testing
import Stash // the public API only, as readers of the guide use it

/// The Stash snippet of `Docs/MigratingFromCache.md`'s "Coming from Cache 6 or 7" (also the DocC
/// catalog's MigratingFromCache article), compiled and run. (The page's other snippets show Cache's
/// code, which is no dependency of Stash.)
@Suite("Migrating from Cache 6 or 7 snippet")
struct MigratingSnippetTests {
    @Test("Storage<Key, Value> code ported to Stash")
    func cache7Port() async throws {
        let directory = TemporaryDirectory()
        // --- guide begins (`directory:` added: the test keeps out of the caches folder) ---
        let users = try Storage<User>(name: "Users-v2", directory: directory.url)
        let id = 42
        try users.setObject(User(name: "Ada", age: 36), forKey: String(id))
        let everyone = users.allKeys.compactMap { try? users.object(forKey: $0) }
        let known = (try? users.existsObject(forKey: String(id))) ?? false
        let ada = try await users.async.object(forKey: String(id))

        let memory = MemoryStorage<User>(config: .standard)
        let disk = try DiskStorage(config: DiskConfig(name: "Users-v2", directory: directory.url),
                                   transformer: TransformerFactory.forCodable(ofType: User.self))
        let storage = Storage(hybridStorage: HybridStorage(memoryStorage: memory, diskStorage: disk))
        memory.removeObject(forKey: String(id))
        // --- guide ends ---
        #expect(everyone == [User(name: "Ada", age: 36)])
        #expect(known)
        #expect(ada == User(name: "Ada", age: 36))
        #expect(try storage.object(forKey: "42") == User(name: "Ada", age: 36))  // read back from disk
        #expect(memory.count == 1)  // …and copied into memory again
        memory.removeObject(forKey: "42")
        #expect(memory.count == 0)
        #expect(try storage.object(forKey: "42") == User(name: "Ada", age: 36))
    }
}
