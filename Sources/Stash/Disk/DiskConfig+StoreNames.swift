public import Foundation
import StashEngine

extension DiskConfig {
    /// The names of the stores inside `directory`: folders Stash marked as stores (of any format it
    /// reads), found up to two levels down (a ``name`` such as `"MyApp/Images"`), sorted. Each is a
    /// ``name`` to open with `directory` as ``directory``. Nothing is created or changed; symbolic
    /// links are not followed, and a store's own folders are not searched.
    ///
    /// ```swift
    /// DiskConfig.storeNames(in: DiskConfig.cachesDirectory)   // ["HTTP", "Users", "stash-cli"]
    /// ```
    /// - Returns: An empty array when `directory` holds no store or cannot be read.
    public static func storeNames(in directory: URL) -> [String] {
        var names: [String] = []
        func search(_ relative: String, depth: Int) {
            let folder = relative.isEmpty ? directory.path : directory.appendingPathComponent(relative).path
            guard let children = try? FileIO.listDirectory(folder) else { return }
            for child in children.sorted() where !child.hasPrefix(".") {
                let name = relative.isEmpty ? child : relative + "/" + child
                let path = folder + "/" + child
                var status = stat()
                guard lstat(path, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { continue }
                if StoreFolder.isStore(path) {
                    names.append(name)
                } else if depth < 2 {
                    search(name, depth: depth + 1)
                }
            }
        }
        search("", depth: 1)
        return names
    }
}

extension StoreFolder {
    /// Whether `path` is a folder Stash marked as a store: a format 2 marker, or a version 1 journal.
    static func isStore(_ path: String) -> Bool {
        guard let names = try? FileIO.listDirectory(path) else { return false }
        return names.contains(markerName) || (names.contains(v1JournalName) && isV1Journal(path + "/" + v1JournalName))
    }
}
