import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The folder of a store: the marker file that makes it one and says which store it is, the lock
/// that keeps other processes out, and the names of the files that are the store's.
///
/// Stash deletes or rewrites only files it created, in a folder it marked (Contract item 13): a
/// non-empty folder without the marker is refused before anything is created in it.
///
/// The marker (`stash-store`) holds the store's identity, a random number every segment of the store
/// repeats in its header, so that a segment copied in from another store is recognised as foreign.
/// Layout: Docs/Format.md, "Marker".
package final class StoreFolder {
    package static let markerName = "stash-store"
    package static let format = 4
    /// The lock file of format 2, which locked a file in the folder (the folder itself is locked
    /// now); a leftover one is left alone.
    static let lockName = "lock"
    /// The key directory (``DirectoryFormat``).
    static let directoryName = "key-directory"
    /// The uses of the key directory's entries as of a later position (``UsesFormat``).
    static let usesName = "key-uses"
    /// The index snapshot of format 3, which the key directory replaced: a writer removes it.
    static let formatThreeSnapshotName = "index.snapshot"
    /// The journal of a version-1 store (upgraded on open).
    package static let v1JournalName = "journal"

    /// What the folder held when it was opened.
    package enum Kind {
        /// Nothing (a new store), or a folder the caller may not create in.
        case new
        /// A store of format 2 or 3 (a format-2 marker is rewritten by a writer).
        case segments
        /// A store written by Stash's first disk format.
        case v1
    }

    package let directory: String
    /// How the folder is shared with other processes: a reader takes its lock only while it opens, a
    /// sole writer for its life, writers in several processes for each operation.
    let sharing: SharingMode
    package let kind: Kind
    /// The open folder: files are created, renamed and removed through it, and it holds the lock.
    package let handle: FolderHandle
    /// The store's identity (0 for a format-2 store opened read-only, whose segments carry none).
    /// Read by every write (the key hash's seed): unchecked, as the engine's other per-write fields
    /// (``DiskStore/totalSize``), since a dynamic exclusivity check costs more than the read.
    @exclusivity(unchecked) package private(set) var storeID: UInt64 = 0
    /// Segments below this number may have version-2 headers (a store upgraded from format 2).
    package private(set) var legacyBelow: UInt32 = 0
    /// The marker says format 2: the store's version-2 segments are counted when they are opened, and
    /// a writer then gives the store an identity (``adoptIdentity(_:legacyBelow:rewrite:)``).
    package private(set) var isFormat2 = false
    /// The marker says format 3: a writer rewrites it as format 4 (``upgradeMarker()``).
    package private(set) var isFormat3 = false
    /// What was wrong with the marker, if anything.
    package private(set) var issues: [StorageError] = []

    /// The shared file (``SharedState``): the writer's mapping, which it publishes its changes
    /// through, or a reader's, which it watches; nil for a reader of a store that has none yet.
    var shared: SharedState?
    /// Segments this writer retired but left in place for processes that follow the store.
    let retained = RetainedSegments()
    /// Whether a writer (in another process) had the store open when a reader opened it: a partial
    /// record at the tail is then a write in progress, not damage.
    package private(set) var writerIsActive = false

    /// Opens the folder at `directory` (creating it unless a reader opens it), checks that it is a store and
    /// takes its lock.
    ///
    /// A writer holds an exclusive lock on the folder for its life, and one on the shared file
    /// (``SharedState``), which it creates. A reader holds no lock for its life, so that a writer can
    /// open while it reads: it takes a shared lock on the folder while it opens when no writer has
    /// it (released by ``endOpening()``), or else reads beside the writer if that writer holds the
    /// shared file's lock (it publishes its changes there). A writer that does not (a Stash from before
    /// readers could share a store) keeps readers out as it always did.
    /// - Throws: ``StorageError/notAStore(directory:)`` for a non-empty folder Stash did not mark,
    ///   ``StorageError/inUse(directory:)``, ``StorageError/io(operation:path:underlying:)`` (a missing
    ///   folder opened read-only is `ENOENT`).
    ///
    /// Writers in several processes take the exclusive lock as for one operation
    /// (``lockForOperation()``); it stays held until the caller releases it, once the store is open.
    package init(directory: String, sharing: SharingMode) throws {
        self.directory = directory
        self.sharing = sharing
        if sharing.writes { try FileIO.createDirectory(directory) }
        handle = try FolderHandle(path: directory)
        switch sharing {
        case .follower:
            // Held while the reader opens: no writer is inside an operation meanwhile (writers in several
            // processes finish all their work on the files inside each operation, holding the lock).
            writerIsActive = try !handle.tryLock(exclusive: false)
        case .sharedWriter:
            try Self.lockForOperation(handle, shared: SharedState.openForReading(in: handle))
        case .soleWriter:
            try Self.lock(handle, exclusive: true)
        }
        // Listed through the folder's own path: it must still be the folder that was opened.
        guard handle.isAtPath else { throw FileIO.error("open", directory, code: ENOENT) }
        let names = try FileIO.listDirectory(directory)
        if names.contains(Self.markerName) {
            kind = .segments
        } else if names.contains(Self.v1JournalName), Self.isV1Journal(directory + "/" + Self.v1JournalName) {
            kind = .v1
        } else if names.allSatisfy({ Self.isLeftoverOfNewStore($0) }) {
            kind = .new
        } else {
            throw StorageError.notAStore(directory: directory)
        }
        if kind == .segments { try readMarker(names: names) }
        if kind == .new, sharing.writes { try writeMarker(storeID: Self.newStoreID()) }
        if !sharing.writes {
            if writerIsActive { try waitForSharingWriter() } else { shared = SharedState.openForReading(in: handle) }
        } else if !handle.isInMemory { // no other process can see a memory folder: nothing to publish
            shared = try SharedState.openForWriting(in: handle, store: storeID, holdingLock: sharing == .soleWriter)
        }
    }

    /// How long a writer in several processes waits for another process's operation (10 s).
    static let operationLockTimeout = DispatchTimeInterval.seconds(10)

    /// Takes the folder's exclusive lock for one operation of a store shared by several writer
    /// processes, waiting while another of them (or a reader opening the store) holds it.
    /// - Throws: ``StorageError/inUse(directory:)`` when a writer that keeps the store to itself (opened
    ///   without ``DiskConfig/allowsWritersInOtherProcesses``) holds it: that one holds it for its life,
    ///   or when a holder keeps it for ``operationLockTimeout``.
    func lockForOperation() throws {
        try Self.lockForOperation(handle, shared: shared)
    }

    /// See ``lockForOperation()``. A killed holder's lock goes with its process, so the wait ends. The
    /// first attempts yield the processor (another writer holds the lock for microseconds); then the
    /// waits grow to a millisecond (a compaction or a reader's open may hold it for longer). A holder
    /// that keeps it for ``operationLockTimeout`` (a stopped process, a writer of a Stash from before
    /// the shared file) gets the caller ``StorageError/inUse(directory:)`` instead of a wait without end.
    private static func lockForOperation(_ handle: FolderHandle, shared: SharedState?) throws {
        var attempt = 0
        var deadline: DispatchTime?
        while try !handle.tryLock(exclusive: true) {
            if let shared, shared.isHeldByWriter { throw StorageError.inUse(directory: handle.path) }
            attempt += 1
            if attempt < 64 {
                sched_yield()
                continue
            }
            let now = DispatchTime.now()
            if let deadline, now > deadline { throw StorageError.inUse(directory: handle.path) }
            if deadline == nil { deadline = now + operationLockTimeout }
            usleep(UInt32(min(1_000, 10 * (attempt - 63))))
        }
    }

    /// A reader found the folder locked by a writer: reads beside it if it publishes its changes (a
    /// writer that keeps the store to itself holds the shared file's lock; one of writers in several
    /// processes says it is inside an operation), or once it has gone; else, after 100 ms,
    /// ``StorageError/inUse(directory:)``. The folder's lock is tried first: a word left set by a
    /// writer killed inside an operation must not make its torn tail look like a write in progress.
    private func waitForSharingWriter() throws {
        for attempt in 0..<50 {
            if try handle.tryLock(exclusive: false) {
                writerIsActive = false
                shared = SharedState.openForReading(in: handle)
                return
            }
            if let state = SharedState.openForReading(in: handle), state.isHeldByWriter || state.operationInProgress {
                shared = state
                return
            }
            if attempt < 49 { usleep(2_000) }
        }
        throw StorageError.inUse(directory: handle.path)
    }

    /// Ends a reader's open: the folder's lock, taken only while it opened, is released.
    func endOpening() {
        if !sharing.writes { handle.unlock() }
    }

    /// A reader opens the store anew: whether a writer is at work on its files now. The folder's lock
    /// is taken, if it is free, until ``endOpening()``, as when the reader first opened: no writer
    /// starts an operation meanwhile, so what the open finds (a torn tail, a superseded segment) is
    /// no write in progress.
    func beginOpeningAgain() {
        guard !sharing.writes else { return }
        writerIsActive = (try? handle.tryLock(exclusive: false)) != true
    }

    /// Names a folder may hold and still count as empty: a format-2 lock file, a Finder file, a
    /// marker being written.
    static func isLeftoverOfNewStore(_ name: String) -> Bool {
        name == lockName || name == ".DS_Store" || name.hasPrefix(markerName + ".")
    }

    static func newStoreID() -> UInt64 { UInt64.random(in: 1...UInt64.max) }

    /// Whether `path` starts with the version-1 journal's magic.
    package static func isV1Journal(_ path: String) -> Bool {
        guard let bytes = try? FileIO.readWholeFile(path) else { return false }
        return bytes.starts(with: JournalFormat.magic)
    }

    /// The marker's text for a store.
    static func markerText(storeID: UInt64, legacyBelow: UInt32 = 0, format: Int = format) -> String {
        var text = "Stash store, format \(format)\nid \(hex(storeID, digits: 16))\n"
        if legacyBelow > 0 { text += "legacy \(hex(UInt64(legacyBelow), digits: 8))\n" }
        return text + "check \(hex(UInt64(UInt32(truncatingIfNeeded: XXH64.hash(Data(text.utf8)))), digits: 8))\n"
    }

    /// Marks the folder as store `storeID` (written under a temporary name, then renamed, flushed).
    func writeMarker(storeID: UInt64, legacyBelow: UInt32 = 0) throws {
        let text = Self.markerText(storeID: storeID, legacyBelow: legacyBelow)
        try handle.replaceFile(Self.markerName, Data(text.utf8), durable: true)
        self.storeID = storeID
        self.legacyBelow = legacyBelow
    }

    /// Reads the store's identity. A marker of a later format is refused; one of format 2 (no
    /// identity) is upgraded by a writer; a damaged one is reported, and a writer rewrites it with
    /// the identity its segments carry (``adoptIdentity(_:legacyBelow:rewrite:)``): the marker's presence alone says
    /// "this folder is a store".
    private func readMarker(names: [String]) throws {
        let path = directory + "/" + Self.markerName
        let text = (try? FileIO.readWholeFile(path)).flatMap { $0.map { String(decoding: $0, as: UTF8.self) } } ?? ""
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let prefix = "Stash store, format "
        if let first = lines.first, first.hasPrefix(prefix), let format = Int(first.dropFirst(prefix.count)) {
            if format > Self.format { throw StorageError.unsupportedFormat(directory: directory, format: format) }
            if format == 2, text == prefix + "2\n" {
                // Every segment so far has a version-2 header: all of them stay the store's (counted
                // when they are opened).
                isFormat2 = true
                return
            }
            if format >= 3, let parsed = Self.parse(lines),
               text == Self.markerText(storeID: parsed.id, legacyBelow: parsed.legacy, format: format) {
                // The check line matched too (it is part of the text compared).
                (storeID, legacyBelow) = parsed
                isFormat3 = format == 3
                return
            }
        }
        issues.append(.corrupted("the store marker \(path) was damaged\(sharing.writes ? "; it was rewritten" : "")"))
    }

    private static func parse(_ lines: [Substring]) -> (id: UInt64, legacy: UInt32)? {
        guard lines.count >= 3, lines[1].hasPrefix("id "), let id = UInt64(lines[1].dropFirst(3), radix: 16), id != 0 else { return nil }
        var legacy: UInt32 = 0
        if lines.count >= 4, lines[2].hasPrefix("legacy ") {
            guard let value = UInt32(lines[2].dropFirst(7), radix: 16) else { return nil }
            legacy = value
        }
        return (id, legacy)
    }

    /// Rewrites a format-3 marker as format 4 (a writer, before its first record).
    func upgradeMarker() throws {
        guard isFormat3, sharing.writes else { return }
        try writeMarker(storeID: storeID, legacyBelow: legacyBelow)
        isFormat3 = false
    }

    /// Whether the marker was unreadable, so that the identity must come from the segments.
    var needsIdentity: Bool { storeID == 0 && !issues.isEmpty }


    /// Takes `storeID` (the one the store's segments carry) as the store's identity after a damaged
    /// marker or a format-2 one; with `rewrite`, a writer rewrites the marker with it. With no segment
    /// to take it from, a new one. Version-2 segments below `legacyBelow` stay the store's.
    func adoptIdentity(_ storeID: UInt64?, legacyBelow: UInt32, rewrite: Bool) throws {
        let id = storeID ?? Self.newStoreID()
        if !sharing.writes || !rewrite {
            (self.storeID, self.legacyBelow) = (id, legacyBelow)
        } else {
            try writeMarker(storeID: id, legacyBelow: legacyBelow)
        }
        isFormat2 = false
    }

    /// Takes the folder's lock, or throws ``StorageError/inUse(directory:)``.
    ///
    /// A process that is just ending may hold the lock a moment longer; a storage of this process
    /// that is being closed is waited for before this is called (``DiskEngine/open(_:sharing:maxSize:durable:mapsSegments:client:)``).
    private static func lock(_ handle: FolderHandle, exclusive: Bool) throws {
        for attempt in 0..<50 {
            if try handle.tryLock(exclusive: exclusive) { return }
            if attempt < 49 { usleep(2_000) }
        }
        throw StorageError.inUse(directory: handle.path)
    }

    /// Removes the key directory, and the key uses file that names it (which no later directory would take).
    func removeDirectory() throws {
        try? handle.remove(Self.usesName)
        try handle.remove(Self.directoryName)
    }

    /// The store's files by kind; names that are not the store's are left out (and left alone).
    /// `kept`: segments a writer retired and kept for processes that follow the store, under a name no
    /// open takes for a segment (``RetainedSegments``).
    package func files() throws -> (segments: [UInt32], values: [UInt64], temporary: [String], kept: [UInt32]) {
        var result: (segments: [UInt32], values: [UInt64], temporary: [String], kept: [UInt32]) = ([], [], [], [])
        for name in try FileIO.listDirectory(directory) {
            if let id = SegmentFile.id(ofName: name) {
                result.segments.append(id)
            } else if name.hasSuffix(SegmentFile.keptSuffix), let id = SegmentFile.id(ofName: String(name.dropLast(SegmentFile.keptSuffix.count))) {
                result.kept.append(id)
            } else if let id = ValueFiles.id(ofName: name) {
                result.values.append(id)
            } else if name == Self.directoryName + ".tmp" || name == Self.usesName + ".tmp" || name == Self.formatThreeSnapshotName || name == Self.formatThreeSnapshotName + ".tmp" || name == Self.markerName + ".tmp"
                        || (name.hasSuffix(SegmentFile.unpublishedSuffix)
                            && SegmentFile.id(ofName: String(name.dropLast(SegmentFile.unpublishedSuffix.count))) != nil) {
                result.temporary.append(name)
            }
        }
        result.segments.sort()
        return result
    }
}

package func hex(_ value: UInt64, digits: Int) -> String {
    let text = String(value, radix: 16)
    return String(repeating: "0", count: max(0, digits - text.count)) + text
}
