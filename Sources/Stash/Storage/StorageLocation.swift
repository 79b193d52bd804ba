public import Foundation
import StashEngine

/// Where a store's folder lives: the parent folder of ``DiskConfig/name``, chosen by what the data is.
///
/// ```swift
/// let todos = try Storage<[Todo]>(name: "Todos", location: .persistent)   // user data: must stay
/// let thumbnails = try Storage<Data>(name: "Thumbnails", location: .caches) // can be fetched again
/// ```
///
/// | Location | Apple platforms | Linux |
/// |---|---|---|
/// | ``persistent`` | Application Support (backed up, never purged) | `$XDG_DATA_HOME`, else `~/.local/share` |
/// | ``caches`` | Library/Caches (purged when storage runs low, not backed up) | `$XDG_CACHE_HOME`, else `~/.cache` |
/// | ``appGroup(_:)`` | the App Group's shared container | throws ``StorageError/locationUnavailable(_:)`` |
/// | ``folder(_:)`` | the folder given | the folder given |
///
/// On macOS, an app outside the App Sandbox shares Application Support and Caches with every other
/// app of the user, so there ``persistent`` and ``caches`` add the app's bundle identifier
/// (`~/Library/Application Support/com.example.Todo/Todos`): two apps' "Todos" never meet. A sandboxed
/// app's folders are its own container already; a command-line tool without a bundle identifier uses
/// the folder itself.
public enum StorageLocation: Sendable, Hashable {
    /// Data that must stay: what the user made, settings, state. Application Support on Apple
    /// platforms; `$XDG_DATA_HOME` (else `~/.local/share`) on Linux.
    case persistent
    /// Data that can be fetched or computed again: the system may delete it when storage runs low
    /// (iOS, tvOS), and backups leave it out. Library/Caches; `$XDG_CACHE_HOME` (else `~/.cache`) on Linux.
    case caches
    /// The shared container of the App Group `identifier` (an app and its extensions; turn on
    /// ``DiskConfig/allowsWritersInOtherProcesses`` when more than one of them writes). Apple
    /// platforms only, with the App Group entitlement.
    case appGroup(String)
    /// A folder of your choice.
    case folder(URL)

    /// The parent folder this location names on this machine, for this process.
    /// - Throws: ``StorageError/locationUnavailable(_:)`` for an App Group this process has no
    ///   container for (or on a platform without App Groups).
    public func directory() throws -> URL {
        try StoreDirectories.current.directory(for: self)
    }
}

/// What the parent folder of a location depends on, gathered once per call: the pure part of
/// ``StorageLocation/directory()`` takes it as input, so every platform's rule is tested on Linux.
struct StoreDirectories {
    enum Platform { case macOS, otherApple, linux }

    var platform: Platform
    var environment: [String: String]
    var home: URL
    /// The system's Application Support and Caches folders (Apple platforms).
    var applicationSupport: URL?
    var caches: URL?
    var bundleIdentifier: String?
    /// The App Group containers the process has (Apple platforms).
    var appGroupContainer: (String) -> URL?

    /// The folder `location` names.
    func directory(for location: StorageLocation) throws -> URL {
        switch location {
        case .folder(let url):
            return url
        case .appGroup(let identifier):
            guard platform != .linux else {
                throw StorageError.locationUnavailable("App Group containers (\"\(identifier)\") exist only on Apple platforms; pass .folder(url) here")
            }
            guard let url = appGroupContainer(identifier) else {
                throw StorageError.locationUnavailable("no container for the App Group \"\(identifier)\": add it to the app's App Groups entitlement")
            }
            return url
        case .persistent:
            if platform == .linux { return xdg("XDG_DATA_HOME", else: ".local/share") }
            return perApp(applicationSupport ?? home.appendingPathComponent("Library/Application Support", isDirectory: true))
        case .caches:
            if platform == .linux { return xdg("XDG_CACHE_HOME", else: ".cache") }
            return perApp(caches ?? home.appendingPathComponent("Library/Caches", isDirectory: true))
        }
    }

    /// `$variable` when it is an absolute path (the XDG rule: a relative one is ignored), else `~/fallback`.
    private func xdg(_ variable: String, else fallback: String) -> URL {
        if let value = environment[variable], value.hasPrefix("/") { return URL(fileURLWithPath: value, isDirectory: true) }
        return home.appendingPathComponent(fallback, isDirectory: true)
    }

    /// On macOS outside the App Sandbox, `folder` is every app's: the app's bundle identifier keeps its stores apart.
    private func perApp(_ folder: URL) -> URL {
        guard platform == .macOS, environment["APP_SANDBOX_CONTAINER_ID"] == nil,
              let bundleIdentifier, !bundleIdentifier.isEmpty, !bundleIdentifier.contains("/") else { return folder }
        return folder.appendingPathComponent(bundleIdentifier, isDirectory: true)
    }

    /// This process's inputs.
    static var current: StoreDirectories {
        let files = FileManager.default
        #if os(macOS)
        let platform = Platform.macOS
        #elseif canImport(Darwin)
        let platform = Platform.otherApple
        #else
        let platform = Platform.linux
        #endif
        #if canImport(Darwin)
        let applicationSupport = files.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
        let caches = files.urls(for: .cachesDirectory, in: .userDomainMask).first
        let container: (String) -> URL? = { files.containerURL(forSecurityApplicationGroupIdentifier: $0) }
        #else
        let (applicationSupport, caches): (URL?, URL?) = (nil, nil)
        let container: (String) -> URL? = { _ in nil }
        #endif
        return StoreDirectories(platform: platform, environment: ProcessInfo.processInfo.environment,
                                home: URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true), applicationSupport: applicationSupport,
                                caches: caches, bundleIdentifier: Bundle.main.bundleIdentifier, appGroupContainer: container)
    }
}
