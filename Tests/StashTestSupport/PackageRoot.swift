public import Foundation

/// The package's root folder in the source tree (the one holding `Package.swift`), for tests that read
/// files of the package: `README.md`, `Docs/`, `Sources/`, fixtures. Found from this file's own place,
/// which does not move when test files are filed into folders.
public let packageRoot: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent() // StashTestSupport
    .deletingLastPathComponent() // Tests
    .deletingLastPathComponent()

/// The file or folder at `path` under the package's root (`"Tests/Support/casefold-fuse.py"`).
public func packageFile(_ path: String) -> URL {
    packageRoot.appendingPathComponent(path)
}
