import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The folder of a store: the marker file that makes it one, the lock that keeps other processes
/// out, and the names of the files that are the store's.
///
/// Stash deletes or rewrites only files it created, in a folder it marked (Contract item 13): a
/// non-empty folder without the marker is refused before anything is created in it.
final class StoreFolder {
    static let markerName = "stash-store"
    static let markerText = "Stash store, format 2\n"
    static let lockName = "lock"
    static let snapshotName = "index.snapshot"
    /// The journal of a version-1 store (upgraded on open).
    static let v1JournalName = "journal"

    /// What the folder held when it was opened.
    enum Kind {
        /// Nothing (a new store), or a folder the caller may not create in.
        case new
        case v2
        /// A store written by Stash's first disk format.
        case v1
    }

    let directory: String
    let readOnly: Bool
    let kind: Kind
    /// What was wrong with the marker, if anything.
    private(set) var issues: [StorageError] = []
    private var lockFD: Int32 = -1

    /// Opens the folder at `directory` (creating it unless `readOnly`), checks that it is a store and
    /// takes its lock: exclusive for a writer, shared for a reader.
    /// - Throws: ``StorageError/notAStore(directory:)`` for a non-empty folder Stash did not mark,
    ///   ``StorageError/inUse(directory:)``, ``StorageError/io(operation:path:underlying:)`` (a missing
    ///   folder opened read-only is `ENOENT`).
    init(directory: String, readOnly: Bool) throws {
        self.directory = directory
        self.readOnly = readOnly
        if !readOnly { try FileIO.createDirectory(directory) }
        let names = try FileIO.listDirectory(directory)
        if names.contains(Self.markerName) {
            kind = .v2
        } else if names.contains(Self.v1JournalName), Self.isV1Journal(directory + "/" + Self.v1JournalName) {
            kind = .v1
        } else if names.allSatisfy({ $0 == Self.lockName || $0 == ".DS_Store" || $0.hasPrefix(Self.markerName + ".") }) {
            kind = .new
        } else {
            throw StorageError.notAStore(directory: directory)
        }
        try lock()
        if kind == .v2 { try checkMarker() }
        if kind == .new, !readOnly { try writeMarker() }
    }

    deinit {
        if lockFD >= 0 { close(lockFD) } // closing releases the lock
    }

    /// Takes the lock again on a new `lock` file: the folder was removed underneath and made anew.
    func relock() throws {
        if lockFD >= 0 { close(lockFD) }
        lockFD = -1
        try lock()
    }

    /// Whether `path` starts with the version-1 journal's magic.
    static func isV1Journal(_ path: String) -> Bool {
        guard let bytes = try? FileIO.readWholeFile(path) else { return false }
        return bytes.starts(with: JournalFormat.magic)
    }

    /// Marks the folder as a store (written under a temporary name, then renamed).
    func writeMarker() throws {
        let temporary = directory + "/" + Self.markerName + ".tmp"
        try FileIO.writeFile(temporary, Data(Self.markerText.utf8), durable: true)
        try FileIO.rename(temporary, directory + "/" + Self.markerName)
        try FileIO.syncDirectory(directory)
    }

    /// A marker of a later format is refused; a damaged one is reported (and rewritten by a writer):
    /// the marker says "this folder is a store", and its presence alone says that.
    private func checkMarker() throws {
        let path = directory + "/" + Self.markerName
        let text = (try? FileIO.readWholeFile(path)).flatMap { $0.map { String(decoding: $0, as: UTF8.self) } }
        if text == Self.markerText { return }
        let prefix = "Stash store, format "
        if let text, text.hasPrefix(prefix), let format = Int(text.dropFirst(prefix.count).prefix { $0.isNumber }), format > 2 {
            throw StorageError.unsupportedFormat(directory: directory, format: format)
        }
        issues.append(.corrupted("the store marker \(path) was damaged\(readOnly ? "" : "; it was rewritten")"))
        if !readOnly { try writeMarker() }
    }

    /// Takes the lock on the `lock` file, or throws ``StorageError/inUse(directory:)``.
    ///
    /// A reader takes a shared lock on a file it opens for reading only, so another user, or a
    /// read-only file system, can read a store; without a lock file it reads without one.
    private func lock() throws {
        let path = directory + "/" + Self.lockName
        do {
            // Non-blocking: a FIFO in the lock's place must not block the open.
            lockFD = try FileIO.open(path, (readOnly ? O_RDONLY : (O_RDWR | O_CREAT)) | O_NONBLOCK)
        } catch where readOnly && (FileIO.isErrno(error, .ENOENT) || FileIO.isErrno(error, .EACCES)) {
            return
        }
        let operation = readOnly ? LOCK_SH : LOCK_EX
        // A store of this process that is being closed may hold the lock for a moment longer.
        for attempt in 0..<50 {
            if flock(lockFD, operation | LOCK_NB) == 0 { return }
            guard errno == EWOULDBLOCK || errno == EINTR else { throw FileIO.error("flock", path) }
            if attempt < 49 { usleep(2_000) }
        }
        close(lockFD)
        lockFD = -1
        throw StorageError.inUse(directory: directory)
    }

    /// The store's files by kind; names that are not the store's are left out (and left alone).
    func files() throws -> (segments: [UInt32], values: [UInt64], temporary: [String]) {
        var result: (segments: [UInt32], values: [UInt64], temporary: [String]) = ([], [], [])
        for name in try FileIO.listDirectory(directory) {
            if let id = SegmentFile.id(ofName: name) {
                result.segments.append(id)
            } else if let id = ValueFiles.id(ofName: name) {
                result.values.append(id)
            } else if name == Self.snapshotName + ".tmp" || name == Self.markerName + ".tmp"
                        || (name.hasSuffix(SegmentFile.unpublishedSuffix)
                            && SegmentFile.id(ofName: String(name.dropLast(SegmentFile.unpublishedSuffix.count))) != nil) {
                result.temporary.append(name)
            }
        }
        result.segments.sort()
        return result
    }
}
