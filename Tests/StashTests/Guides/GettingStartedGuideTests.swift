import Foundation
import Testing
import Stash // the public API only, as readers of the guide use it

/// The rest of `Docs/GettingStarted.md`'s snippets (the DocC catalog's GettingStarted article),
/// compiled and run in the guide's order on one store: creating a storage, the synchronous and
/// asynchronous APIs, offline fallback, typed views, migration, images, transformers, observers.
/// Between the guide's markers only `directory:` is added (the test keeps to its own folder).
@Suite("Getting started guide")
struct GettingStartedGuideTests {
    final class ProfileScreen: Sendable {}
    private struct Person1: Codable, Sendable { let fullName: String }
    private struct Person2: Codable, Sendable { let firstName: String; let lastName: String }

    @Test("the guide's snippets compile and behave as it says")
    func guide() async throws {
        let directory = TemporaryDirectory()
        let avatarURL = directory.url.appendingPathComponent("avatar.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
                  0, 0, 0, 16, 0, 0, 0, 16, 8, 6, 0, 0, 0, 0, 0, 0, 0]).write(to: avatarURL)

        // --- Creating a storage ---
        let storage = try Storage<User>(
            diskConfig: DiskConfig(name: "Users", expiry: .seconds(86_400), maxSize: 50_000_000, directory: directory.url),
            memoryConfig: MemoryConfig(countLimit: 200, totalCostLimit: 5_000_000),
            transformer: TransformerFactory.forCodable(ofType: User.self)
        )
        print(storage.path)

        // --- The synchronous API ---
        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        try storage.setObject(User(name: "Bob", age: 41), forKey: "bob", expiry: .never)
        let me: User = try storage.object(forKey: "me")
        let entry: Entry<User> = try storage.entry(forKey: "me")
        print(entry.object, entry.expiry, entry.filePath ?? "", entry.isExpired)
        let known = try storage.existsObject(forKey: "me")
        let stale = try storage.isExpiredObject(forKey: "me")
        try storage.removeObject(forKey: "bob")
        try storage.removeExpiredObjects()
        print(storage.allKeys)
        print(storage.totalSize)
        for info in storage.entryInfos {
            print(info.key, info.size, info.expiry, info.lastAccess, info.isExpired(at: Date()))
        }
        try storage.trim(toSize: 1_000_000)
        #expect(me == User(name: "Ada", age: 36) && known && !stale && storage.allKeys == ["me"])
        try storage.removeAll()
        #expect(storage.allKeys.isEmpty)

        // --- Expiry: offline fallback ---
        func loadProfile(fetch: () async throws -> User) async -> (user: User, isStale: Bool)? {
            do {
                let fresh = try await fetch()
                try? await storage.async.setObject(fresh, forKey: "me", expiry: .seconds(3600))
                return (fresh, false)
            } catch {
                guard let entry = try? await storage.async.entry(forKey: "me") else { return nil }
                return (entry.object, entry.isExpired)
            }
        }
        #expect(await loadProfile { User(name: "Ada", age: 36) }?.isStale == false)
        let offline = await loadProfile { throw URLError(.notConnectedToInternet) }
        #expect(offline?.user == User(name: "Ada", age: 36) && offline?.isStale == false)

        // --- The asynchronous API ---
        storage.async.object(forKey: "me") { result in
            switch result {
            case .success(let user): print(user.name)
            case .failure(let error): print(error)
            }
        }
        try await storage.async.setObject(User(name: "Ada", age: 37), forKey: "me")
        let user = try await storage.async.object(forKey: "me")
        let asyncEntry = try await storage.async.entry(forKey: "me")
        #expect(user.age == 37 && asyncEntry.object.age == 37)

        // --- Typed views ---
        let raw: Storage<Data> = storage.transformData()
        let json = try raw.object(forKey: "me")
        let tags: Storage<[String]> = storage.transformCodable(ofType: [String].self)
        try tags.setObject(["swift", "linux"], forKey: "tags")
        let images: Storage<ImageData> = storage.transformImage()
        let custom: Storage<String> = storage.transform(transformer: Transformer<String>(
            toData: { Data($0.utf8) },
            fromData: { String(decoding: $0, as: UTF8.self) }
        ))
        #expect(try JSONDecoder().decode(User.self, from: json).age == 37)
        #expect(try custom.object(forKey: "me").contains("Ada"))

        // --- Migration between model versions ---
        try storage.transformCodable(ofType: Person1.self).setObject(Person1(fullName: "Ada Lovelace"), forKey: "person")
        let old = storage.transformCodable(ofType: Person1.self)
        let new = storage.transformCodable(ofType: Person2.self)
        if (try? new.object(forKey: "person")) == nil, let person = try? old.object(forKey: "person") {
            let parts = person.fullName.split(separator: " ").map(String.init)
            try new.setObject(Person2(firstName: parts[0], lastName: parts[1]), forKey: "person")
        }
        #expect(try new.object(forKey: "person").lastName == "Lovelace")

        // --- Images ---
        let png = try ImageData(data: Data(contentsOf: avatarURL))
        print(png.format, png.pixelSize.map { "\($0.width)×\($0.height)" } ?? "size unknown")
        try images.setObject(png, forKey: "avatar")
        let stored = try images.entry(forKey: "avatar")
        #expect(stored.object.format == .png && stored.object.data == png.data)

        // --- Your own transformer ---
        let csvRow = Transformer<[String]>(
            toData: { Data($0.joined(separator: ",").utf8) },
            fromData: { data in
                guard let text = String(data: data, encoding: .utf8) else { throw CocoaError(.fileReadCorruptFile) }
                return text.components(separatedBy: ",")
            }
        )
        let rows = try Storage<[String]>(diskConfig: DiskConfig(name: "Rows", directory: directory.url), transformer: csvRow)
        try rows.setObject(["a", "b"], forKey: "row")
        #expect(try rows.object(forKey: "row") == ["a", "b"])

        // --- Observing changes ---
        let screen = ProfileScreen()
        let all = storage.addStorageObserver(screen) { screen, storage, change in
            switch change {
            case .add(let key): print("stored \(key)")
            case .remove(let key): print("removed \(key)")
            case .removeAll: print("cleared")
            case .removeExpired: print("expired values removed")
            }
        }
        let one = storage.addObserver(screen, forKey: "me") { screen, storage, change in
            switch change {
            case .edit(let before, let after): print("\(before?.name ?? "nothing") -> \(after.name)")
            case .remove: print("me was removed")
            }
        }
        try storage.setObject(User(name: "Ada", age: 38), forKey: "me")
        all.cancel()
        one.cancel()

        let changes = storage.changes()
        let task = Task {
            for await change in changes { print(change) }
        }
        task.cancel()
    }
}
