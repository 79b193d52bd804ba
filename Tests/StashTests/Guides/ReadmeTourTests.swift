import Foundation
import Testing
import Stash // the public API only, as README readers use it

/// The README's tour, compiled and run, so the snippets users copy keep working.
@Suite("README tour")
struct ReadmeTourTests {
    private struct User: Codable, Sendable { var name: String; var age: Int }
    private final class Screen: Sendable {}

    @Test("the README tour compiles and behaves as it says")
    @available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) // ObservableValue
    func readmeTour() async throws {
        let directory = TemporaryDirectory()
        let clock = TestClock()
        let avatarURL = directory.url.appendingPathComponent("avatar.png")
        try Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
                  0, 0, 0, 16, 0, 0, 0, 16, 8, 6, 0, 0, 0, 0, 0, 0, 0]).write(to: avatarURL)

        // --- README begins (the set-up's location is a test folder, and the clock `now:` is the test's) ---
        let storage = try Storage<User>(name: "Users", expiry: .seconds(86_400), maxSize: 50_000_000,
                                        location: .folder(directory.url), now: clock.function)
        _ = StorageLocation.persistent // the README's location

        try storage.setObject(User(name: "Ada", age: 36), forKey: "me")
        let me = try storage.object(forKey: "me")

        let nobody = try storage.objectIfPresent(forKey: "nobody")
        let guest = try storage.object(forKey: "guest", default: User(name: "Guest", age: 0))
        #expect(nobody == nil)
        #expect(guest.name == "Guest")

        try storage.setObject(me, forKey: "team.ada")
        print(storage.allKeys(withPrefix: "team."))
        #expect(storage.allKeys(withPrefix: "team.") == ["team.ada"])
        for (key, user) in try storage.objects(withPrefix: "team.") { print(key, user.name) }
        #expect(try storage.objects(withPrefix: "team.").map(\.key) == ["team.ada"])

        try storage.setObject(me, forKey: "short", expiry: .seconds(60))
        clock.advance(by: 61) // "…later"
        #expect(throws: StorageError.self) { try storage.object(forKey: "short") }
        let entry = try storage.entry(forKey: "short")
        if entry.isExpired { print("showing stale data for \(entry.object.name)") }
        #expect(entry.isExpired)

        try await storage.async.setObject(me, forKey: "async")
        let again = try await storage.async.object(forKey: "async")
        #expect(again.name == "Ada")
        storage.async.object(forKey: "me") { result in
            if case .success(let user) = result { print(user.name) }
        }

        let raw: Storage<Data> = storage.transformData()
        let json = try raw.object(forKey: "me")
        #expect(try JSONDecoder().decode(User.self, from: json).age == 36)

        let profile = await ObservableValue("me", in: storage, default: User(name: "Nobody", age: 0))
        print(await profile.value?.name ?? "nobody")
        #expect(await profile.value?.name == "Ada")
        await MainActor.run { profile.value?.age += 1 }
        #expect(try storage.object(forKey: "me").age == 37)

        let screen = Screen()
        let token = storage.addObserver(screen, forKey: "me") { screen, storage, change in
            if case .edit(_, let after) = change { print("me is now \(after.name)") }
        }
        token.cancel()
        let changes = storage.changes()
        try storage.removeObject(forKey: "async")
        for await change in changes {
            #expect(change == .remove(key: "async"))
            break
        }

        let preview = try Storage<User>.inMemory()
        try preview.setObject(me, forKey: "me")

        let images = storage.transformImage()
        let png = try ImageData(data: Data(contentsOf: avatarURL))
        try images.setObject(png, forKey: "avatar")
        #expect(try images.object(forKey: "avatar").format == .png)
        // --- README ends ---
    }
}
