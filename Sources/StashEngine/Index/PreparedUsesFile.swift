import Foundation

/// The next key uses file, made ready on a thread of its own once a store that only reads has read
/// enough for its close to write one (``DiskStore/prepareUsesFileIfDue()``): a file with no name yet
/// (``FolderHandle/openUnnamedFile()``) written once with zeros, so that the close writes the uses over
/// pages the system has already made instead of into new ones. Writing 23 MB (the uses of a million
/// entries) into a new file took 17 ms on tmpfs and 30–52 ms on ext4 on this project's machines, over
/// the pages of an existing one 7–10 ms: most of the close of a process that read every key.
///
/// The file gets its name only at close, once whole (``write(_:as:in:)``); a crash before leaves nothing.
/// Where it cannot be made (no unnamed files, a memory volume), or was made for a directory that is
/// no longer the store's, the close writes the uses file as before. Its blocks are the disk's again as
/// soon as it cannot be used: a fill that failed (a full disk) and a file dropped (``discard()``: the
/// store is about to change) are cut to nothing there and then, not when the file goes.
final class PreparedUsesFile: @unchecked Sendable {
    // @unchecked Sendable: `isReady` is set on `queue` and read after a `queue.sync`; `isNamed` is touched
    // on the store's queue alone; the rest never changes.
    private let queue = DispatchQueue(label: "Stash.uses-file", qos: .utility)
    /// The file, open for writing (a test compares it with the uses file the close named).
    let fd: Int32
    /// The file's length: that of the uses file of the directory whose header hash is `directory`.
    let length: Int
    let directory: UInt64
    private var isReady = false
    private var isNamed = false
    private let isCancelled = AtomicWord()

    private init(fd: Int32, length: Int, directory: UInt64) {
        (self.fd, self.length, self.directory) = (fd, length, directory)
    }

    /// A file of `length` bytes in `folder` for the uses of the directory `directory`, being made ready;
    /// nil where the folder makes no unnamed files.
    static func start(in folder: FolderHandle, length: Int, directory: UInt64) -> PreparedUsesFile? {
        guard let fd = folder.openUnnamedFile() else { return nil }
        let file = PreparedUsesFile(fd: fd, length: length, directory: directory)
        file.queue.async { file.fill() }
        return file
    }

    private func fill() {
        let zeros = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 4096)
        defer { zeros.deallocate() }
        zeros.initializeMemory(as: UInt8.self, repeating: 0)
        var offset = 0
        while offset < length {
            let count = min(zeros.count, length - offset)
            // Dropped meanwhile, or a full disk: the blocks written go back (the close writes the file as before).
            guard isCancelled.value == 0,
                  (try? FileIO.writeAll(fd, UnsafeRawBufferPointer(rebasing: zeros[0..<count]), at: offset, path: "")) != nil else {
                _ = FileIO.truncate(fd, to: 0)
                return
            }
            offset += count
        }
        isReady = true
    }

    /// Stops it and gives its blocks back now (unless it was named: then it is the store's uses file).
    /// On the store's queue; waits for at most the part of the fill under way.
    func discard() {
        isCancelled.store(1)
        wait()
        if !isNamed { _ = FileIO.truncate(fd, to: 0) }
    }

    /// Returns once the file is made ready (or could not be): bounded by about the work of writing it.
    func wait() {
        queue.sync {}
    }

    /// Writes `parts`, one after the other, over the file and gives it the name `name` in `folder`
    /// (``FolderHandle/name(_:as:)``). False if it was not made ready, `parts` are not its length, or a
    /// write or the naming failed: the caller then writes the file as before.
    func write(_ parts: [UnsafeRawBufferPointer], as name: String, in folder: FolderHandle) -> Bool {
        wait()
        guard isReady, parts.reduce(0, { $0 + $1.count }) == length else { return false }
        var offset = 0
        for part in parts {
            guard (try? FileIO.writeAll(fd, part, at: offset, path: folder.filePath(name))) != nil else { return false }
            offset += part.count
        }
        guard (try? folder.name(fd, as: name)) != nil else { return false }
        isNamed = true
        return true
    }

    deinit {
        BackgroundRelease.close(fd) // a file never named goes with its last reference: off this thread
    }
}
