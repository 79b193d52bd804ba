import Foundation

/// The next key uses file, made ready on a thread of its own once a store that only reads has read
/// enough for its close to write one (``DiskStore/prepareUsesFileIfDue()``): a file with no name yet
/// (``FolderHandle/openUnnamedFile()``) written once with zeros, so that the close writes the uses over
/// pages the system has already made instead of into new ones. Writing 23 MB (the uses of a million
/// entries) into a new file took 17 ms on tmpfs and 30–52 ms on ext4 on this project's machines, over
/// the pages of an existing one 7–10 ms: most of the close of a process that read every key.
///
/// The file gets its name only at close, once whole (``write(_:as:in:)``); a crash before leaves nothing.
/// Where it cannot be made (no unnamed files, a memory volume), was made for a directory that is no
/// longer the store's, or is not filled yet at close (waiting for the rest of the fill and then writing
/// over it would cost more than writing a new file), the close writes the uses file as before. Its
/// blocks are the disk's again as soon as it cannot be used: a fill that failed (a full disk) cuts the
/// file to nothing there and then, and so does a file dropped (``discard()``: the store is about to
/// change) on a disk short of space; elsewhere a dropped file goes with its last reference, off the
/// store's queue (cutting 23 MB took 3–6 ms on this project's machines).
package final class PreparedUsesFile: @unchecked Sendable {
    // @unchecked Sendable: `isNamed` is touched on the store's queue alone; the rest is atomic or never changes.
    /// One queue for every store's files: a process rarely has two made ready at once, and a test can
    /// wait for all of them (``finishFills()``).
    private static let queue = DispatchQueue(label: "Stash.uses-file", qos: .utility)
    /// The file, open for writing (a test compares it with the uses file the close named).
    let fd: Int32
    /// The file's length: that of the uses file of the directory whose header hash is `directory`.
    let length: Int
    let directory: UInt64
    /// 1 once the fill wrote every byte.
    private let isFilled = AtomicWord()
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
        queue.async { file.fill() }
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
        isFilled.store(1)
    }

    /// Stops it (it is not used once named: it is the store's uses file then). On a disk short of space
    /// its blocks go back now, after the part of the fill under way; otherwise with its last reference.
    /// On the store's queue.
    func discard() {
        isCancelled.store(1)
        guard !isNamed, diskIsShort else { return }
        Self.finishFills()
        _ = FileIO.truncate(fd, to: 0)
    }

    /// Whether the file system holding the file has less room left than twice the file's length (or
    /// cannot say): the change about to come may need the file's blocks. (Files are made ready on Linux
    /// alone, and asked about there alone: no app binary asks a disk's free space.)
    private var diskIsShort: Bool {
        #if os(Linux)
        var info = statvfs()
        guard fstatvfs(fd, &info) == 0 else { return true }
        return Int(info.f_bavail) &* Int(info.f_frsize) < 2 &* length
        #else
        return true
        #endif
    }

    /// Returns once every fill begun before has ended (bounded by about the work of writing them), and
    /// what a file let go of since then is handed to the release thread (tests that count descriptors:
    /// ``BackgroundRelease/finish()`` after it).
    package static func finishFills() {
        queue.sync {}
    }

    /// Writes `parts`, one after the other, over the file and gives it the name `name` in `folder`
    /// (``FolderHandle/name(_:as:)``). False if it is not filled yet (the fill then stops), `parts` are not
    /// its length, or a write or the naming failed: the caller then writes the file as before.
    func write(_ parts: [UnsafeRawBufferPointer], as name: String, in folder: FolderHandle) -> Bool {
        guard isFilled.value == 1 else {
            isCancelled.store(1)
            return false
        }
        guard parts.reduce(0, { $0 + $1.count }) == length else { return false }
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
