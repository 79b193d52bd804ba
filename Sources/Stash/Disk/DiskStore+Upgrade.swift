import Foundation

extension DiskStore {
    /// Carries a store of the first disk format (a journal plus one file per value, named by a hash
    /// of the key) over into segments, then removes the old files.
    ///
    /// Crash-safe: the marker that makes the folder a version-2 store is written only once every value
    /// is in the new segment (flushed); an upgrade a crash cut short is started over from the journal.
    func upgradeFromVersion1() throws {
        let journalPath = directory + "/" + StoreFolder.v1JournalName
        let bytes = try FileIO.readWholeFile(journalPath) ?? []
        var entries = LRUIndex<V1Record>()
        let (_, damage) = JournalFormat.parse(bytes) { record in
            switch record {
            case .set(let key, let info): entries.set(key, info)
            case .remove(let key): entries.remove(key)
            case .access(let key, let time): _ = entries.use(key) { $0.lastAccess = time }
            case .clear: entries.removeAll()
            }
        }
        if let damage { recoveryIssues.append(.corrupted("version-1 journal: \(damage); the records after it were dropped")) }
        // Leftovers of an upgrade a crash cut short.
        let leftovers = try folder.files()
        for id in leftovers.segments { try folder.handle.remove(SegmentFile.name(of: id)) }
        for id in leftovers.values { values.remove(id) }
        let storeID = StoreFolder.newStoreID()
        let segment = try SegmentFile.create(id: 1, in: folder.handle, store: storeID, durable: false)
        var lost = 0
        var buffer: [UInt8] = []
        for (key, info) in entries.entriesOldestFirst {
            let path = directory + "/" + Self.version1FileName(forKey: key, generation: info.generation)
            guard let data = try? FileIO.readFile(path, expectedSize: info.size) else {
                lost += 1
                continue
            }
            var value = StoredValue.inline(size: data.count)
            if Self.needsFile(size: data.count, storesValuesAsFiles: false) {
                // Flushed: the version-1 files are deleted once the marker is written.
                let file = try values.write(data, durable: true)
                value = .file(id: file.id, size: data.count, hash: file.hash)
            }
            // A version-1 journal could hold NaN times (refused since): a NaN expiry counts as
            // expired (shown flagged, never as valid), a NaN last use as the oldest.
            let expiry = info.expiry.isNaN ? 0 : info.expiry
            let time = info.lastAccess.isNaN ? 0 : info.lastAccess
            data.withUnsafeBytes { raw in
                _ = SegmentFormat.appendSet(key: key, expiry: expiry, time: time, value: value,
                                            inlineBytes: raw, salt: segment.salt, to: &buffer)
            }
            if buffer.count >= 1 << 20 {
                try segment.append(buffer)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try segment.append(buffer)
        try segment.sync()
        try folder.handle.sync()
        try folder.writeMarker(storeID: storeID)
        if lost > 0 {
            recoveryIssues.append(.corrupted("\(lost) values of the version-1 store were missing or damaged and were not carried over"))
        }
        try removeVersion1Files()
    }

    /// Removes the journal and value files of a version-1 store once its upgrade is complete (also
    /// when a crash cut the upgrade short after the marker was written).
    func removeVersion1Files() throws {
        for name in try FileIO.listDirectory(directory) where Self.isVersion1FileName(name) {
            try? folder.handle.remove(name)
        }
        try? folder.handle.remove("journal.compacting")
        try folder.handle.remove(StoreFolder.v1JournalName)
    }

    /// `<32 hex digits of the key's SHA-256>.<hex generation>`: a version-1 value file's name.
    static func version1FileName(forKey key: String, generation: UInt64) -> String {
        let hash = String(unsafeUninitializedCapacity: 32) { out in
            SHA256.writeHex(of: key, into: UnsafeMutableBufferPointer(rebasing: out[0..<32]))
            return 32
        }
        return hash + "." + String(generation, radix: 16)
    }

    /// `<32 hex digits>.<1 to 16 hex digits>`.
    static func isVersion1FileName(_ name: String) -> Bool {
        let utf8 = name.utf8
        guard (34...49).contains(utf8.count) else { return false }
        for (offset, byte) in utf8.enumerated() {
            let isHexDigit = (48...57).contains(byte) || (97...102).contains(byte)
            guard offset == 32 ? byte == 46 : isHexDigit else { return false }
        }
        return true
    }
}
