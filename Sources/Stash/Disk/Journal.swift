import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The append-only journal file of a store, and the `lock` file that keeps other processes out.
///
/// Reads are recorded too (as access records, so the LRU order survives a restart), but
/// buffered: they reach the file with the next write, or every 4 KiB, or when the store closes.
final class Journal {
    private let directory: String
    private let journalPath: String
    private let compactingPath: String
    private let lockPath: String
    private var fd: Int32 = -1
    private var lockFD: Int32 = -1
    /// The file's length: where the next record starts, and where a failed append is cut back to.
    private var length = 0
    private var pendingAccesses: [UInt8] = []
    /// Records in the file (including buffered ones); compaction rewrites it when this grows.
    private(set) var recordCount = 0

    init(directory: String) {
        self.directory = directory
        journalPath = directory + "/journal"
        compactingPath = directory + "/journal.compacting"
        lockPath = directory + "/lock"
    }

    deinit {
        close() // also when opening failed half-way: the lock must not outlive a failed open
    }

    /// Whether the journal file was unlinked underneath (its folder removed, maybe made anew).
    var isDetached: Bool { fd >= 0 && FileIO.isUnlinked(fd) }

    /// Takes the lock and replays the file, cutting off a torn or damaged tail.
    /// - Parameters:
    ///   - reserve: Called first with the number of entries the replay is likely to leave.
    ///   - apply: Called with each valid record, in order.
    /// - Returns: What was wrong with the file, if anything, and whether a journal file existed at all.
    func open(reserve: (Int) -> Void, apply: (JournalRecord) -> Void) throws -> (damage: String?, existed: Bool) {
        try lock()
        try FileIO.remove(compactingPath) // left by a crash during compaction
        let bytes = try FileIO.readWholeFile(journalPath)
        reserve(JournalFormat.expectedEntries(bytes ?? []))
        var count = 0
        let (validLength, damage) = JournalFormat.parse(bytes ?? []) { record in
            count += 1
            apply(record)
        }
        if validLength == 0 {
            try rewrite(with: [])
        } else {
            fd = try FileIO.open(journalPath, O_WRONLY | O_APPEND)
            if ftruncate(fd, off_t(validLength)) != 0 { throw FileIO.error("ftruncate", journalPath) }
            length = validLength
            recordCount = count
        }
        return (damage, bytes != nil)
    }

    func close() {
        if fd >= 0 { _ = closeDescriptor(fd) }
        if lockFD >= 0 { _ = closeDescriptor(lockFD) } // closing releases the lock
        fd = -1
        lockFD = -1
    }

    /// Buffers an access record.
    func noteAccess(key: String, time: Double) {
        JournalFormat.append(.access(key: key, time: time), to: &pendingAccesses)
        recordCount += 1
        if pendingAccesses.count >= 4096 { try? flush() }
    }

    /// Appends buffered access records and `records` in one write.
    func append(_ records: [JournalRecord], durable: Bool) throws {
        var bytes = pendingAccesses
        for record in records { JournalFormat.append(record, to: &bytes) }
        guard !bytes.isEmpty else { return }
        do {
            try bytes.withUnsafeBytes { try FileIO.writeAll(fd, $0, path: journalPath) }
            if durable, fsync(fd) != 0 { throw FileIO.error("fsync", journalPath) }
        } catch {
            // Cut a partly written record off, so later records are not lost behind it.
            _ = ftruncate(fd, off_t(length))
            throw error
        }
        length += bytes.count
        recordCount += records.count
        pendingAccesses.removeAll(keepingCapacity: true)
    }

    /// Writes buffered access records.
    func flush() throws {
        try append([], durable: false)
    }

    /// Replaces the file with `records` atomically (new file, `fsync`, rename, `fsync` of the folder).
    ///
    /// The folder is flushed so that the rename is durable before anything is appended to the new
    /// file: otherwise a power cut could bring back the old journal without a durable write's record.
    func rewrite(with records: [JournalRecord]) throws {
        var bytes = JournalFormat.magic
        for record in records { JournalFormat.append(record, to: &bytes) }
        try bytes.withUnsafeBytes { try FileIO.writeFile(compactingPath, Data($0), durable: true) }
        // Opened before the rename (the descriptor follows the file): once renamed, nothing can fail
        // between the new file taking the journal's name and appends going to it.
        let newFD = try FileIO.open(compactingPath, O_WRONLY | O_APPEND)
        do {
            try FileIO.rename(compactingPath, journalPath)
        } catch {
            _ = closeDescriptor(newFD)
            throw error
        }
        if fd >= 0 { _ = closeDescriptor(fd) }
        fd = newFD
        length = bytes.count
        recordCount = records.count
        pendingAccesses.removeAll(keepingCapacity: true)
        try FileIO.syncDirectory(directory)
    }

    /// The folder was removed underneath: lock and start a new, empty journal.
    func reopenAfterDirectoryLoss() throws {
        close()
        try lock()
        try rewrite(with: [])
    }

    /// Takes the exclusive lock on the `lock` file, or throws ``StorageError/inUse(directory:)``.
    private func lock() throws {
        lockFD = try FileIO.open(lockPath, O_RDWR | O_CREAT)
        // A store of this process that is being closed may hold the lock for a moment longer.
        for attempt in 0..<50 {
            if flock(lockFD, LOCK_EX | LOCK_NB) == 0 { return }
            guard errno == EWOULDBLOCK || errno == EINTR else { throw FileIO.error("flock", lockPath) }
            if attempt < 49 { usleep(2_000) }
        }
        _ = closeDescriptor(lockFD)
        lockFD = -1
        throw StorageError.inUse(directory: (lockPath as NSString).deletingLastPathComponent)
    }
}

private func closeDescriptor(_ fd: Int32) -> Int32 { close(fd) }
