import Foundation
import Testing
@testable import StashEngine
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `MemoryVolume` through the two wrappers the engine uses (`FileIO`, `FolderHandle`): the POSIX
/// rules the engine relies on, kept in memory. Each test has a memory folder of its own.
@Suite("Memory volume")
struct MemoryVolumeTests {
    /// A new memory folder, made as the engine makes a store's folder.
    private func folder() throws -> FolderHandle {
        let path = MemoryVolume.newFolderPath() + "/store"
        try FileIO.createDirectory(path)
        return try FolderHandle(path: path)
    }

    private func write(_ text: String, to name: String, in folder: FolderHandle) throws {
        try folder.writeFile(name, Data(text.utf8), durable: true)
    }

    private func text(of name: String, in folder: FolderHandle) throws -> String? {
        try FileIO.readWholeFile(folder.filePath(name)).map { String(decoding: $0, as: UTF8.self) }
    }

    @Test("descriptors are virtual (below -1), and a memory path is nothing on disk")
    func virtualDescriptors() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        #expect(folder.fd < -1)
        #expect(folder.isInMemory)
        let file = try folder.open("a", O_RDWR | O_CREAT | O_EXCL)
        defer { FileIO.close(file) }
        #expect(file < -1 && file != folder.fd)
        var info = stat()
        #expect(stat(folder.path, &info) == -1 && errno == ENOTDIR) // under /dev/null: nothing can be there
        #expect(folder.path.hasPrefix(MemoryVolume.root + "/"))
    }

    @Test("pwrite extends the file and zero-fills a gap; pread reads what is there, fewer bytes at the end")
    func preadPwrite() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        let fd = try folder.open("file", O_RDWR | O_CREAT | O_EXCL)
        defer { FileIO.close(fd) }
        try [UInt8]([1, 2, 3]).withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 0, path: "file") }
        try [UInt8]([9, 9]).withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 5, path: "file") }
        #expect(try FileIO.size(fd, path: "file") == 7)
        #expect(try FileIO.read(fd, at: 0, count: 100, path: "file") == [1, 2, 3, 0, 0, 9, 9])
        try [UInt8]([7]).withUnsafeBytes { try FileIO.writeAll(fd, $0, at: 1, path: "file") }
        #expect(try FileIO.read(fd, at: 1, count: 3, path: "file") == [7, 3, 0])
        #expect(try FileIO.read(fd, at: 7, count: 4, path: "file") == [])
        #expect(FileIO.truncate(fd, to: 2) == 0)
        #expect(try FileIO.readAll(fd, path: "file") == [1, 7])
        try FileIO.synchronize(fd, "file") // nothing to flush: no error
    }

    @Test("O_EXCL refuses a name in use; a missing name is ENOENT; a read-only descriptor cannot write")
    func openRules() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        try write("x", to: "taken", in: folder)
        #expect(throws: StorageError.self) { try folder.open("taken", O_WRONLY | O_CREAT | O_EXCL) }
        do {
            _ = try folder.open("missing", O_RDONLY)
            Issue.record("opened a missing file")
        } catch {
            #expect(FileIO.isErrno(error, .ENOENT))
        }
        let reader = try folder.open("taken", O_RDONLY)
        defer { FileIO.close(reader) }
        #expect(throws: StorageError.self) { try [UInt8]([1]).withUnsafeBytes { try FileIO.writeAll(reader, $0, at: 0, path: "taken") } }
    }

    @Test("a rename replaces the file at the name it goes to")
    func renameOverExisting() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        try write("old", to: "marker", in: folder)
        try folder.replaceFile("marker", Data("new".utf8), durable: true) // written as marker.tmp, renamed over
        #expect(try text(of: "marker", in: folder) == "new")
        #expect(try FileIO.listDirectory(folder.path) == ["marker"])
        #expect(folder.status(of: "marker.tmp") == nil)
    }

    @Test("an unlinked file stays readable through its open descriptor until closed, and has no name meanwhile")
    func unlinkWhileOpen() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        try write("still here", to: "segment", in: folder)
        let fd = try folder.open("segment", O_RDONLY)
        try folder.remove("segment")
        try folder.remove("segment") // a missing file is no error
        #expect(FileIO.isUnlinked(fd))
        #expect(String(decoding: try FileIO.read(fd, at: 0, count: 100, path: "segment"), as: UTF8.self) == "still here")
        #expect(FileIO.close(fd) == 0)
        #expect(FileIO.close(fd) == -1 && errno == EBADF)
        #expect(try text(of: "segment", in: folder) == nil)
    }

    @Test("a listing has every name; a removed folder is gone, refuses new files, and its open files read on")
    func listAndRemoveFolder() throws {
        let folder = try folder()
        let parent = (folder.path as NSString).deletingLastPathComponent
        for name in ["b", "a", "c"] { try write(name, to: name, in: folder) }
        #expect(try FileIO.listDirectory(folder.path).sorted() == ["a", "b", "c"])
        #expect(try FileIO.listDirectory(parent) == ["store"])
        let identity = try #require(folder.identity)
        #expect(folder.isAtPath)
        #expect(try FolderHandle(path: folder.path).identity == identity)
        let open = try folder.open("a", O_RDONLY)
        MemoryVolume.removeFolder(parent)
        #expect(!MemoryVolume.hasFolder(folder.path) && !MemoryVolume.hasFolder(parent))
        #expect(folder.isRemoved && !folder.isAtPath)
        #expect(throws: StorageError.self) { try FileIO.listDirectory(folder.path) }
        #expect(throws: StorageError.self) { try folder.open("d", O_WRONLY | O_CREAT | O_EXCL) }
        #expect(try FileIO.read(open, at: 0, count: 1, path: "a") == Array("a".utf8))
        FileIO.close(open)
    }

    @Test("two memory folders have identities of their own, never a folder on disk's")
    func identities() throws {
        let first = try folder(), second = try folder()
        defer {
            for folder in [first, second] { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        }
        let disk = try #require(FolderIdentity(path: NSTemporaryDirectory()))
        #expect(first.identity != second.identity)
        #expect(first.identity != disk && second.identity != disk)
        #expect(try first.tryLock(exclusive: true) && second.tryLock(exclusive: true)) // only this process sees them
    }

    @Test("reads and writes of one file from several threads keep every write whole")
    func concurrentReadsAndWrites() throws {
        let folder = try folder()
        defer { MemoryVolume.removeFolder((folder.path as NSString).deletingLastPathComponent) }
        let fd = try folder.open("file", O_RDWR | O_CREAT | O_EXCL)
        defer { FileIO.close(fd) }
        let block = 4096
        DispatchQueue.concurrentPerform(iterations: 64) { index in
            let bytes = [UInt8](repeating: UInt8(index), count: block)
            try? bytes.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: index * block, path: "file") }
            _ = try? FileIO.read(fd, at: 0, count: 64 * block, path: "file")
        }
        let all = try FileIO.read(fd, at: 0, count: 64 * block, path: "file")
        #expect(all.count == 64 * block)
        #expect((0..<64).allSatisfy { index in all[(index * block)..<((index + 1) * block)].allSatisfy { $0 == UInt8(index) } })
    }
}
