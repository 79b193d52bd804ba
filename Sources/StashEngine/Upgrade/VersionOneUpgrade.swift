import Foundation

/// Carries a store of the first disk format (a journal plus one file per value, named by a hash of
/// the key) over into segments, then removes the old files: a step of opening such a store, once.
///
/// Crash-safe: the marker that makes the folder a version-2 store is written only once every value is
/// in the new segments (flushed); an upgrade a crash cut short is started over from the journal.
struct VersionOneUpgrade {
    let folder: StoreFolder
    let values: ValueFiles
    /// The size at which the upgrade starts a new segment.
    let segmentLimit: Int

    private var directory: String { folder.directory }

    /// Runs the upgrade; what it found wrong (a damaged journal, values it could not carry over) is
    /// appended to `issues`.
    func run(reporting issues: inout [StorageError]) throws {
        let journalPath = directory + "/" + StoreFolder.v1JournalName
        let (entries, damage) = Self.replayJournal(try FileIO.readWholeFile(journalPath) ?? [])
        if let damage { issues.append(.corrupted("version-1 journal: \(damage); the records after it were dropped")) }
        // Leftovers of an upgrade a crash cut short.
        let leftovers = try folder.files()
        for id in leftovers.segments { try folder.handle.remove(SegmentFile.name(of: id)) }
        for id in leftovers.values { values.remove(id) }
        let storeID = StoreFolder.newStoreID()
        var output = try UpgradeOutput(folder: folder.handle, store: storeID, limit: segmentLimit)
        var lost = 0
        for (_, entry) in entries.entriesOldestFirst {
            guard let data = readValue(entry) else {
                lost += 1
                continue
            }
            var value = StoredValue.inline(size: data.count)
            if DiskStore.needsFile(size: data.count, storesValuesAsFiles: false) {
                // Flushed: the version-1 files are deleted once the marker is written.
                let file = try values.write(data, durable: true)
                value = .file(id: file.id, size: data.count, hash: file.hash)
            }
            // A version-1 journal could hold NaN times (refused since): a NaN expiry counts as
            // expired (shown flagged, never as valid), a NaN last use as the oldest. Its times are
            // seconds since 1970: they keep the meaning they had (``StoredTime/fromSeconds1970(_:)``).
            let info = entry.record
            let expiry = StoredTime.fromSeconds1970(info.expiry.isNaN ? 0 : info.expiry)
            let time = StoredTime.fromSeconds1970(info.lastAccess.isNaN ? 0 : info.lastAccess)
            try data.withUnsafeBytes { raw in
                try output.appendSet(key: entry.spelling, expiry: expiry, time: time, value: value, inlineBytes: raw)
            }
        }
        try output.finish()
        try folder.handle.sync()
        try folder.writeMarker(storeID: storeID)
        if lost > 0 {
            issues.append(.corrupted("\(lost) values of the version-1 store were missing or damaged and were not carried over"))
        }
        try Self.removeFiles(of: folder)
    }

    /// One key of a version-1 store as its journal leaves it.
    package struct Entry {
        package var record: V1Record
        /// The spelling of the key in the latest set record: the v1 writer named the value file after
        /// the spelling of the call that wrote it (its index, keyed canonically, kept the first one).
        package var spelling: String
        /// Other spellings set records used for this key, in case the latest one does not name the file.
        var otherSpellings: [String] = []
    }

    /// Replays a version-1 journal by canonical key (Contract item 8): a set, remove or access record
    /// in any spelling acts on the one entry of its key; a set record's spelling becomes the entry's.
    static func replayJournal(_ bytes: [UInt8]) -> (entries: LRUIndex<Entry>, damage: String?) {
        var entries = LRUIndex<Entry>()
        let (_, damage) = JournalFormat.parse(bytes) { record in
            switch record {
            case .set(let key, let info):
                var entry = Entry(record: info, spelling: key)
                if let previous = entries.peek(key) {
                    entry.otherSpellings = (previous.otherSpellings + [previous.spelling]).filter { !isSameSpelling($0, key) }
                }
                entries.set(key, entry)
            case .remove(let key): entries.remove(key)
            case .access(let key, let time): _ = entries.use(key) { $0.record.lastAccess = time }
            case .clear: entries.removeAll()
            }
        }
        return (entries, damage)
    }

    /// The bytes of `entry`'s version-1 value file, or nil if it is missing or has the wrong size.
    ///
    /// Looked up by the spelling of the latest set record first, then by the key's other spellings
    /// seen in set records and its composed and decomposed forms: a journal rewritten by v1's own
    /// compaction names every key by the first spelling v1's index met, not by the one its file was
    /// named after. The generation in the name makes any match exactly this write's file.
    private func readValue(_ entry: Entry) -> Data? {
        var candidates = [entry.spelling] + entry.otherSpellings
        for form in [entry.spelling.precomposedStringWithCanonicalMapping, entry.spelling.decomposedStringWithCanonicalMapping]
        where !candidates.contains(where: { Self.isSameSpelling($0, form) }) {
            candidates.append(form)
        }
        for spelling in candidates {
            let path = directory + "/" + Self.fileName(forKey: spelling, generation: entry.record.generation)
            if let data = try? FileIO.readFile(path, expectedSize: entry.record.size) { return data }
        }
        return nil
    }

    /// Whether two keys are spelled with the same bytes (`==` on `String` compares canonically).
    static func isSameSpelling(_ first: String, _ second: String) -> Bool {
        first.utf8.elementsEqual(second.utf8)
    }

    /// Removes the journal and value files of a version-1 store once its upgrade is complete (also
    /// when a crash cut the upgrade short after the marker was written).
    static func removeFiles(of folder: StoreFolder) throws {
        for name in try FileIO.listDirectory(folder.directory) where isFileName(name) {
            try? folder.handle.remove(name)
        }
        try? folder.handle.remove("journal.compacting")
        try folder.handle.remove(StoreFolder.v1JournalName)
    }

    /// `<32 hex digits of the key's SHA-256>.<hex generation>`: a version-1 value file's name.
    static func fileName(forKey key: String, generation: UInt64) -> String {
        let hash = String(unsafeUninitializedCapacity: 32) { out in
            SHA256.writeHex(of: key, into: UnsafeMutableBufferPointer(rebasing: out[0..<32]))
            return 32
        }
        return hash + "." + String(generation, radix: 16)
    }

    /// `<32 hex digits>.<1 to 16 hex digits>`.
    static func isFileName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard (34...49).contains(utf8.count) else { return false }
        for (offset, byte) in utf8.enumerated() {
            let isHexDigit = (48...57).contains(byte) || (97...102).contains(byte)
            guard offset == 32 ? byte == 46 : isHexDigit else { return false }
        }
        return true
    }
}

/// The segments an upgrade writes: records are packed in order, and a new segment is started before
/// a record that would take the current one past the limit (offsets are 32-bit: a version-1 store
/// larger than 4 GiB must not end up in one segment). Replayed in id order, the records keep theirs.
package struct UpgradeOutput {
    package let folder: FolderHandle
    package let store: UInt64
    package let limit: Int
    package private(set) var files: [SegmentFile] = []
    private var buffer: [UInt8] = []

    package init(folder: FolderHandle, store: UInt64, limit: Int) throws {
        (self.folder, self.store, self.limit) = (folder, store, limit)
        files = [try SegmentFile.create(id: 1, in: folder, store: store, durable: false)]
    }

    private var current: SegmentFile { files[files.count - 1] }

    mutating func appendSet(key: String, expiry: Double, time: Double, value: StoredValue,
                            inlineBytes: UnsafeRawBufferPointer) throws {
        let start = buffer.count
        _ = SegmentFormat.appendSet(key: key, expiry: expiry, time: time, value: value, inlineBytes: inlineBytes,
                                    salt: current.salt, to: &buffer)
        // A segment holds at most `limit` bytes, or one record alone (values from 256 KiB on are
        // files of their own, so a record is small): its offsets stay far below 4 GiB.
        if current.length + buffer.count > limit, current.length + start > current.recordsStart {
            // The checksum covers the segment's salt: the record is encoded again for the next one.
            buffer.removeSubrange(start...)
            try current.append(buffer)
            buffer.removeAll(keepingCapacity: true)
            files.append(try SegmentFile.create(id: current.id + 1, in: folder, store: store, durable: false))
            _ = SegmentFormat.appendSet(key: key, expiry: expiry, time: time, value: value, inlineBytes: inlineBytes,
                                        salt: current.salt, to: &buffer)
        }
        if buffer.count >= 1 << 20 {
            try current.append(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }

    /// Writes what is buffered and flushes every segment.
    package mutating func finish() throws {
        try current.append(buffer)
        buffer.removeAll()
        for file in files { try file.sync() }
    }
}
