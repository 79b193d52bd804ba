import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#endif

/// The file systems a run measures on: the work folder's disk (ext4 on the CI machines) and tmpfs
/// (memory: no device underneath, so what remains is the engines' own work and system calls).
enum FileSystem {
    enum Choice: String, CaseIterable {
        /// The folder given by `--work-dir` (`Benchmarks/run`: under `$TMPDIR` or `/tmp`).
        case work
        /// `/dev/shm`, when it is a tmpfs.
        case tmpfs
    }

    /// `--fs both|work|disk|ext4|tmpfs` (`disk` and `ext4` are other names for the work folder).
    static func choices(_ text: String) throws -> [Choice] {
        switch text {
        case "both": return [.work, .tmpfs]
        case "work", "disk", "ext4": return [.work]
        case "tmpfs": return [.tmpfs]
        default: throw BenchError("--fs takes both, work (or disk, ext4) or tmpfs, not \(text)")
        }
    }

    /// The type of the file system that holds `path` ("ext4", "tmpfs", …): on Linux the mount
    /// point in /proc/mounts that is the longest prefix of the real path (no `statfs` in Glibc's
    /// Swift module), elsewhere `statfs`'s type name.
    static func kind(of path: String) -> String {
        #if os(Linux)
        guard let real = realpath(path, nil) else { return "unknown" }
        let resolved = String(cString: real)
        free(real)
        guard let mounts = try? String(contentsOfFile: "/proc/mounts", encoding: .utf8) else { return "unknown" }
        var best = (length: -1, type: "unknown")
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 3 else { continue }
            // Spaces and other bytes in mount points are written as octal escapes (\040).
            let point = String(fields[1]).replacingOccurrences(of: "\\040", with: " ")
            let contains = point == "/" || resolved == point || resolved.hasPrefix(point + "/")
            if contains, point.count >= best.length { best = (point.count, String(fields[2])) }
        }
        return best.type
        #else
        var info = statfs()
        guard statfs(path, &info) == 0 else { return "unknown" }
        return withUnsafeBytes(of: info.f_fstypename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        #endif
    }

    /// The tmpfs folder to measure in, or nil (with the reason) when there is none.
    static func tmpfsParent(_ candidate: String) -> (url: URL?, reason: String) {
        guard FileManager.default.isWritableFile(atPath: candidate) else { return (nil, "\(candidate) is not writable") }
        let kind = kind(of: candidate)
        guard kind == "tmpfs" else { return (nil, "\(candidate) is \(kind), not tmpfs") }
        return (URL(fileURLWithPath: candidate), "")
    }
}
