import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A durable store whose large values filled the disk frees space by the calls meant to free it.
@Suite("A full disk", .serialized)
struct FullDiskTests: StoreFileScenario {
    @Test("a durable store whose large values filled the disk frees space by removing one value, trimming, or removeAll",
          .enabled(if: FullDiskTests.canMount, "needs root and permission to mount a tmpfs"),
          arguments: ["removeObject", "trim", "removeAll"])
    func durableFullDiskOfValueFiles(how: String) throws {
        try Self.withMountedTmpfs(size: "2m") { try Self.fillAndFree(mountPoint: $0, how: how) }
    }

    private static func fillAndFree(mountPoint: String, how: String) throws {
        let config = DiskConfig(name: "store", directory: URL(fileURLWithPath: mountPoint), durable: true)
        var keys: [String] = []
        do {
            let disk = try DiskStorage(config: config, transformer: TransformerFactory.forData())
            for index in 0..<100 {
                do {
                    try disk.setObject(Data(repeating: UInt8(index), count: 300_000), forKey: "v\(index)")
                    keys.append("v\(index)")
                } catch {
                    #expect(FileIO.isErrno(error, .ENOSPC), "\(error)")
                    break
                }
            }
            try #require(keys.count >= 3)
            // The last free pages too: not even a tombstone fits.
            try fill(mountPoint, leaving: 0)
            let before = freeBytes(mountPoint)
            do {
                switch how {
                case "removeObject": try disk.removeObject(forKey: keys[0])
                case "trim": try disk.trim(toSize: 300_000)
                default: try disk.removeAll()
                }
            } catch {
                Issue.record("\(how) on a full disk failed: \(error)")
            }
            #expect(freeBytes(mountPoint) >= before + 290_000, "\(how) freed no space")
            try? FileManager.default.removeItem(atPath: mountPoint + "/filler")
            try disk.setObject(Data("after".utf8), forKey: "after")
        }
        let reopened = try DiskStorage(config: config, transformer: TransformerFactory.forData())
        #expect(try reopened.object(forKey: "after") == Data("after".utf8))
        for key in keys.dropFirst(how == "removeObject" ? 1 : keys.count - 1) {
            if let value = try? reopened.object(forKey: key) { #expect(value.count == 300_000, "\(key)") }
        }
        #expect(reopened.recoveryIssues.isEmpty, "\(reopened.recoveryIssues)")
    }

    static let canMount: Bool = geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/mount")

    /// Runs `body` on a tmpfs of `size` (`mount`'s spelling: "2m") mounted in a fresh temporary folder
    /// for it alone, unmounted after.
    static func withMountedTmpfs(size: String, _ body: (_ mountPoint: String) throws -> Void) throws {
        let directory = TemporaryDirectory()
        let mountPoint = directory.path + "/small"
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let mount = try run("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint])
        try #require(mount.status == 0, "mount: \(mount.ending): \(mount.stderr)")
        defer { _ = try? run("/usr/bin/umount", ["-l", mountPoint]) }
        try withExtendedLifetime(directory) { try body(mountPoint) }
    }

    /// Runs `tool` to its end (as every test runs a process: ``ChildProcess``, not Foundation's `Process`).
    static func run(_ tool: String, _ arguments: [String]) throws -> ChildProcess.Run {
        try ChildProcess.run(URL(fileURLWithPath: tool), arguments, deadline: TestDeadline.long)
    }

    /// Fills the file system at `mountPoint` with a file `filler` there, but for `free` bytes.
    static func fill(_ mountPoint: String, leaving free: Int) throws {
        let fd = open(mountPoint + "/filler", O_WRONLY | O_CREAT, 0o644)
        try #require(fd >= 0)
        defer { close(fd) }
        let page = [UInt8](repeating: 1, count: 4096)
        var size = 0
        while write(fd, page, page.count) == page.count { size += page.count }
        if free > 0 { try #require(ftruncate(fd, off_t(max(0, size - free))) == 0) }
    }

    static func freeBytes(_ path: String) -> Int {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }
}
