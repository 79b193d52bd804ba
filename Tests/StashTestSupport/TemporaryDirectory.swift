public import Foundation
public import Stash

/// A fresh, uniquely named temporary directory, removed when the test that made it drops it.
public final class TemporaryDirectory: Sendable {
    public let url: URL

    /// A directory named after `name` (the test's function by default), so a left-over one says whose it is.
    public init(_ name: String = #function) {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("StashTests-\(safe.prefix(40))-\(UUID().uuidString)", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    public var path: String { url.path }

    /// A disk configuration for a store named `name` inside this directory (shared with writers in
    /// other processes with `sharedWriters`).
    public func diskConfig(_ name: String = "store", expiry: Expiry = .never, maxSize: Int = 0, sharedWriters: Bool = false) -> DiskConfig {
        DiskConfig(name: name, expiry: expiry, maxSize: maxSize, directory: url, allowsWritersInOtherProcesses: sharedWriters)
    }

    /// The store folder of ``diskConfig(_:expiry:maxSize:sharedWriters:)``.
    public func storePath(_ name: String = "store") -> String {
        url.appendingPathComponent(name).path
    }
}
