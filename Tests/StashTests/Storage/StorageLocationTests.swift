import Foundation
import Testing
@testable import Stash
@testable import StashEngine

/// Where a store's folder lives, per platform: the pure rule, fed each platform's inputs, so every
/// case runs on Linux.
@Suite("Storage locations")
struct StorageLocationTests {
    private let home = URL(fileURLWithPath: "/Users/ada", isDirectory: true)

    private func inputs(_ platform: StoreDirectories.Platform, environment: [String: String] = [:],
                        bundle: String? = "com.example.Todo", groups: [String: URL] = [:]) -> StoreDirectories {
        StoreDirectories(platform: platform, environment: environment, home: home,
                         applicationSupport: platform == .linux ? nil : home.appendingPathComponent("Library/Application Support"),
                         caches: platform == .linux ? nil : home.appendingPathComponent("Library/Caches"),
                         bundleIdentifier: bundle, appGroupContainer: { groups[$0] })
    }

    @Test("macOS outside the sandbox: persistent and caches folders are under the bundle identifier")
    func macOSUnsandboxedUsesBundleIdentifier() throws {
        let mac = inputs(.macOS)
        #expect(try mac.directory(for: .persistent).path == "/Users/ada/Library/Application Support/com.example.Todo")
        #expect(try mac.directory(for: .caches).path == "/Users/ada/Library/Caches/com.example.Todo")
        // Two apps' "Todos" never meet.
        let other = inputs(.macOS, bundle: "com.example.Notes")
        #expect(try other.directory(for: .persistent) != mac.directory(for: .persistent))
    }

    @Test("macOS in the sandbox, a tool without a bundle identifier, and iOS use the folder itself")
    func sandboxedAndToolsUseTheFolder() throws {
        let sandboxed = inputs(.macOS, environment: ["APP_SANDBOX_CONTAINER_ID": "com.example.Todo"])
        #expect(try sandboxed.directory(for: .persistent).path == "/Users/ada/Library/Application Support")
        #expect(try inputs(.macOS, bundle: nil).directory(for: .caches).path == "/Users/ada/Library/Caches")
        #expect(try inputs(.otherApple).directory(for: .persistent).path == "/Users/ada/Library/Application Support")
    }

    @Test("Linux: persistent is $XDG_DATA_HOME else ~/.local/share; caches is $XDG_CACHE_HOME else ~/.cache")
    func linuxFollowsXDG() throws {
        let plain = inputs(.linux)
        #expect(try plain.directory(for: .persistent).path == "/Users/ada/.local/share")
        #expect(try plain.directory(for: .caches).path == "/Users/ada/.cache")
        let xdg = inputs(.linux, environment: ["XDG_DATA_HOME": "/data", "XDG_CACHE_HOME": "/cache"])
        #expect(try xdg.directory(for: .persistent).path == "/data")
        #expect(try xdg.directory(for: .caches).path == "/cache")
        // A relative XDG path is ignored, as the XDG rules say.
        #expect(try inputs(.linux, environment: ["XDG_DATA_HOME": "data"]).directory(for: .persistent).path == "/Users/ada/.local/share")
    }

    @Test("an App Group is its container on Apple platforms, and a clear error without one or on Linux")
    func appGroups() throws {
        let group = URL(fileURLWithPath: "/containers/group.todo", isDirectory: true)
        #expect(try inputs(.otherApple, groups: ["group.todo": group]).directory(for: .appGroup("group.todo")) == group)
        for platform in [StoreDirectories.Platform.otherApple, .linux] {
            let error = storageError { _ = try inputs(platform).directory(for: .appGroup("group.todo")) }
            guard case .locationUnavailable(let reason)? = error else {
                Issue.record("expected locationUnavailable, got \(String(describing: error))")
                continue
            }
            #expect(reason.contains("group.todo"))
        }
    }

    @Test("a folder is used as given, and the one-line initializer opens the store inside it")
    func folderLocation() throws {
        let directory = TemporaryDirectory()
        #expect(try inputs(.macOS).directory(for: .folder(directory.url)) == directory.url)
        let todos = try Storage<[String]>(name: "Todos", location: .folder(directory.url))
        try todos.setObject(["Milk"], forKey: "inbox")
        #expect(todos.path.hasPrefix(directory.url.appendingPathComponent("Todos").path))
    }

    @Test("on this machine, persistent on Linux is under XDG_DATA_HOME or ~/.local/share")
    func currentPersistentDirectory() throws {
        #if os(Linux)
        let environment = ProcessInfo.processInfo.environment
        let expected = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? URL(fileURLWithPath: NSHomeDirectory()).appendingPathComponent(".local/share").path
        #expect(try StorageLocation.persistent.directory().path == URL(fileURLWithPath: expected).path)
        #endif
    }
}
