package import Foundation

/// A change another process made, read from the records it appended: what this process's observers
/// are told when the store catches up (``Follower/catchUp(_:)``, ``SharedWriter/beginOperation(_:)``).
package enum ForeignChange {
    /// A set; the value's bytes when packed (or read before the store opens anew), else its file (read
    /// when the change is published).
    case set(key: String, inline: Data?, file: (id: UInt64, size: Int, hash: UInt64)?)
    case remove(key: String)
    case clear
}

extension DiskStore {
    /// Whether anyone in this process observes the store: changes of other processes are read for
    /// observers only then.
    var isObserved: Bool { client?.hasObservers == true }
}

extension CatchingUp {
    /// The changes the records in `raw` at `records` (offset and length in `raw`) make, in order.
    static func foreignChanges(in raw: UnsafeRawBufferPointer, _ records: [(record: SegmentRecord, offset: Int, length: Int)])
        -> [ForeignChange] {
        records.compactMap { record, offset, length in
            switch record {
            case .set(let key, let info):
                switch info.value {
                case .inline(let size):
                    // A packed value is the record's last bytes.
                    return .set(key: key, inline: Data(raw[(offset + length - size)..<(offset + length)]), file: nil)
                case .file(let id, let size, let hash):
                    return .set(key: key, inline: nil, file: (id, size, hash))
                }
            case .remove(let key): return .remove(key: key)
            case .clear: return .clear
            case .access, .batch: return nil
            }
        }
    }

    /// The changes in records another process wrote after `read` (a segment this store read up to a
    /// length): the rest of that segment, then the segments numbered after it (not a compaction's
    /// outputs, which hold copies), up to `end` (a segment and its length as an open of the store read
    /// them) or, without one, to the last whole record of each. Values in files are read now. Empty
    /// when nothing observes the store.
    ///
    /// A writer among several reads them before it opens the store anew (holding the lock, nothing
    /// changes meanwhile), since its open removes value files no record it replays names, such as those
    /// a removeAll deleted but left for this process (``RetainedSegments``); a reader after its open,
    /// up to where the open read (``Follower``): a writer may append meanwhile.
    func changes(after read: (file: SegmentFile, length: Int)?, through end: (id: UInt32, length: Int)?,
                 in store: DiskStore) -> [ForeignChange] {
        guard store.isObserved else { return [] }
        var changes: [ForeignChange] = []
        if let (file, start) = read, let size = FileIO.fileStatus(file.fd).flatMap({ FileNumber.int($0.st_size) }) {
            let stop = end.map { $0.id == file.id ? min($0.length, size) : size } ?? size
            if stop > start, let bytes = try? FileIO.read(file.fd, at: start, count: stop - start, path: file.path) {
                changes += Self.changes(in: bytes, from: 0, salt: file.salt)
            }
        }
        let folder = store.log.folder
        let first = read?.file.id ?? 0
        // Segments, and segments a writer retired but kept for this process under their kept name: one
        // may be renamed so between the listing and its open (kept, as this process's mark says).
        let listing = try? folder.files()
        let later = Set((listing?.segments ?? []) + (listing?.kept ?? [])).filter { $0 > first && $0 <= end?.id ?? .max }.sorted()
        for id in later {
            let name = SegmentFile.name(of: id)
            guard let (file, bytes) = (try? SegmentFile.open(id, in: folder.handle, writable: false, name: name))
                    ?? (try? SegmentFile.open(id, in: folder.handle, writable: false, name: name + SegmentFile.keptSuffix)),
                  file.flags & SegmentFormat.compactionFlag == 0, file.store == folder.storeID else { continue }
            let stop = end.map { $0.id == id ? min($0.length, bytes.count) : bytes.count } ?? bytes.count
            guard stop > file.recordsStart else { continue }
            changes += Self.changes(in: Array(bytes[..<stop]), from: file.recordsStart, salt: file.salt)
        }
        return changes.map { change in
            guard case .set(let key, nil, let file?) = change,
                  let value = try? store.log.values.read(file.id, size: file.size, hash: file.hash) else { return change }
            return .set(key: key, inline: value, file: nil)
        }
    }

    private static func changes(in bytes: [UInt8], from start: Int, salt: UInt64) -> [ForeignChange] {
        bytes.withUnsafeBytes { raw in
            var records: [(record: SegmentRecord, offset: Int, length: Int)] = []
            _ = SegmentFormat.scan(raw, salt: salt, from: start) { records.append(($0, $1, $2)) }
            return foreignChanges(in: raw, records)
        }
    }

    /// Tells this process's observers of `changes`, in order, once the index holds them; `before` is
    /// what the store had before them (the keys a `clear` among them removed, the values sets replaced).
    func publishForeign(_ store: DiskStore, _ changes: [ForeignChange], before: ForeignBefore) {
        guard let client = store.client, !changes.isEmpty else { return }
        var (keys, replaced) = (before.keys, before.values)
        // Whole commits of other processes, published as one change (a batch is never seen in halves).
        var events: [StoreEvent] = []
        for change in changes {
            switch change {
            case .set(let key, let inline, let file):
                // Kept while this process may read its record (RetainedSegments); gone only where marks are
                // not kept (another system, a shared file deleted): the change is then left out.
                guard let value = inline ?? file.flatMap({ try? store.log.values.read($0.id, size: $0.size, hash: $0.hash) }) else { continue }
                keys.insert(key)
                let previous = replaced.updateValue(value, forKey: key)
                events.append(.set(key: key, value: value, previous: previous))
            case .remove(let key):
                replaced[key] = nil
                // A tombstone of a key that was not there removed nothing.
                if keys.remove(key) != nil { events.append(.remove(keys: [key], reason: .removed)) }
            case .clear:
                events.append(.removeAll(keys: keys.sorted()))
                keys = []
                replaced = [:]
            }
        }
        client.publish(events)
    }

    /// What ``publishForeign(_:_:before:)`` needs of the store before `changes` apply: every key if they
    /// hold a `clear`, else those of their removals the store has; and for the keys their sets change
    /// that key observers watch, the value the store has (`KeyChange.edit(before:after:)`, as for this
    /// process's own writes). Read before the index takes the changes.
    ///
    /// `old`: the index and segments the store had before it was opened anew, when the changes are read
    /// after that open; nil: the store's own.
    func foreignBefore(_ store: DiskStore, _ changes: [ForeignChange],
                       old: (index: KeyDirectory, segments: [UInt32: SegmentFile])? = nil) -> ForeignBefore {
        let index = old?.index ?? store.withIndex { $0 }
        var before = ForeignBefore()
        if changes.contains(where: { if case .clear = $0 { true } else { false } }) {
            before.keys = Set(index.keys)
        } else {
            for case .remove(let key) in changes where index.peek(key) != nil { before.keys.insert(key) }
        }
        for case .set(let key, _, _) in changes where before.values[key] == nil && store.client?.hasKeyObservers(key) == true {
            if let record = index.peek(key), let data = try? store.log.load(key, record, in: old?.segments) { before.values[key] = data }
        }
        return before
    }
}

/// The store's keys and values before another process's changes (``CatchingUp/foreignBefore(_:_:old:)``).
package struct ForeignBefore {
    package var keys = Set<String>()
    package var values: [String: Data] = [:]
}
