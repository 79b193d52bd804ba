public import Foundation

/// The executable product `name` of this package (`stash`, `StashTorture`, `StashRedisChild`), built
/// with the tests: next to the test bundle (`<scratch>/debug/StashPackageTests.xctest` on Linux, a
/// bundle in the products folder on Apple platforms), else found under the build folder. Nil if it was
/// not built.
public func builtExecutable(named name: String) -> URL? {
    var folders = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
                   URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()]
    folders += Bundle.allBundles.filter { $0.bundleURL.pathExtension == "xctest" }.map { $0.bundleURL.deletingLastPathComponent() }
    if let found = folders.lazy.map({ $0.appendingPathComponent(name) }).first(where: isExecutableFile) { return found }
    // Fallback: search the build folders that hold the products folder (e.g. `<scratch>/<triple>/debug`).
    for root in folders.map({ $0.deletingLastPathComponent() }) {
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = walker?.nextObject() as? URL {
            if walker?.level ?? 0 > 3 { walker?.skipDescendants() }
            if url.lastPathComponent == name, isExecutableFile(url) { return url }
        }
    }
    return nil
}

private func isExecutableFile(_ url: URL) -> Bool {
    var isDirectory: ObjCBool = false
    return FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) && !isDirectory.boolValue
        && FileManager.default.isExecutableFile(atPath: url.path)
}
