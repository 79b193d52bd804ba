import Foundation
import Stash

/// `follow DIR`: opens the store read-only (a reader beside a writer process), prints `ready`, then
/// runs one read per line of stdin, `get KEY`, and prints `got KEY BYTES`, `missing KEY` or
/// `failed KEY` (any other error). Exits 0 at the end of stdin. For the tests of readers whose
/// reads meet damage while a writer process holds the store.
func runFollow(_ path: String) throws -> Never {
    let url = URL(fileURLWithPath: path, isDirectory: true)
    let config = DiskConfig(name: url.lastPathComponent, directory: url.deletingLastPathComponent(), readOnly: true)
    let storage = try DiskStorage(config: config, transformer: TransformerFactory.forData())
    emit("ready")
    while let line = readLine() {
        let words = line.split(separator: " ").map(String.init)
        guard words.count == 2, words[0] == "get" else { fail("unknown step \(line)", status: 2) }
        do {
            emit("got \(words[1]) \(try storage.object(forKey: words[1]).count)")
        } catch StorageError.notFound {
            emit("missing \(words[1])")
        } catch {
            emit("failed \(words[1])")
        }
    }
    exit(0)
}
