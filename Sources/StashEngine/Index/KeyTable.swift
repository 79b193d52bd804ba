#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The index's overlay (``KeyDirectory``): the entries written since the key directory, found by
/// the key's stable hash (``KeyHash``), which every write computes for its record anyway.
///
/// A `[String: Entry]` dictionary hashes each key again with SipHash on every look-up and again for
/// every entry each time it grows, and compares keys as Swift strings; that was a sixth of a write's
/// instructions (Docs/Benchmarks.md). Here the entries are one dense array, and an open-addressing
/// table of 8-byte slots (linear probing, at most three quarters full) points into it: each slot
/// holds the entry's position and the high half of its hash, so a probe rarely reads an entry that
/// is not the one sought. Two keys are the same when their hashes are and their bytes are (the
/// common case, one `memcmp`), or when they compare equal as strings (another normalization form of
/// the same key: the hash is of the NFC form, so both land on the same slot).
struct KeyTable {
    struct Entry {
        /// The key as last written (a write in an equivalent spelling respells it, as its record is).
        var key: String
        /// The record; its ``DiskRecord/keyHash`` is the key's hash, by which the entry is found.
        var record: DiskRecord
        var recency: UInt64
    }

    /// The live entries, in no particular order.
    private(set) var entries: [Entry] = []
    /// Entry position + 1 in the low half (0: empty), the hash's high half in the high half.
    private var slots: [UInt64] = []

    /// Calls `body` with every entry's key as UTF-8, record and recency, read where the entry lies: no
    /// copy of an entry, and so no retain and release of its key (writing a directory of a million
    /// entries spent a fifth of its time on them).
    func forEachEntryBytes(_ body: (_ key: UnsafeRawBufferPointer, _ record: DiskRecord, _ recency: UInt64) -> Void) {
        entries.withUnsafeBufferPointer { entries in
            guard let first = entries.baseAddress else { return }
            for entry in first..<first + entries.count {
                // Through the pointer, field by field: a subscript's element is a copy of the whole entry.
                let (record, recency) = (entry.pointee.record, entry.pointee.recency)
                let done: Void? = entry.pointee.key.utf8.withContiguousStorageIfAvailable { body(UnsafeRawBufferPointer($0), record, recency) }
                if done == nil {
                    var key = entry.pointee.key // not contiguous (bridged): made so
                    key.withUTF8 { body(UnsafeRawBufferPointer($0), record, recency) }
                }
            }
        }
    }

    var isEmpty: Bool { entries.isEmpty }
    /// The bytes of every entry's key, as UTF-8.
    var keyBytes: Int { entries.reduce(0) { $0 + $1.key.utf8.count } }
    var count: Int { entries.count }

    /// The position in ``entries`` of `key`, whose hash is `hash`.
    func position(of key: String, hash: UInt64) -> Int? {
        firstPosition(hash: hash) { Self.isSameKey(entries[$0].key, key) }
    }

    /// The position in ``entries`` of the entry whose key's hash is `hash` and whose record is at `offset`
    /// of `segment` (an access record's entry): no key compared.
    func position(hash: UInt64, segment: UInt32, offset: UInt32) -> Int? {
        firstPosition(hash: hash) { entries[$0].record.segment == segment && entries[$0].record.offset == offset }
    }

    /// Probes from `hash`'s home slot for the first entry with that hash that `matches` accepts (given
    /// its position: an entry handed over by value is a copy, a retain and a release of its key).
    @inline(__always)
    private func firstPosition(hash: UInt64, where matches: (Int) -> Bool) -> Int? {
        guard !entries.isEmpty else { return nil }
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let word = slots[slot]
            if word == 0 { return nil }
            if word >> 32 == hash >> 32 {
                let position = Int(word & 0xFFFF_FFFF) - 1
                if entries[position].record.keyHash == hash, matches(position) { return position }
            }
            slot = (slot + 1) & mask
        }
    }

    /// Read in place (`_read`): `table[position].record` copies the record, not the entry and its key.
    subscript(position: Int) -> Entry {
        _read { yield entries[position] }
        _modify { yield &entries[position] }
    }

    /// Adds `entry` (its key absent); its record's `keyHash` must be the key's hash.
    mutating func insert(_ entry: Entry) {
        if (entries.count + 1) * 4 > slots.count * 3 { grow() }
        entries.append(entry)
        place(hash: entry.record.keyHash, position: entries.count - 1)
    }

    /// Removes the entry at `position`; returns it.
    @discardableResult
    mutating func remove(at position: Int) -> Entry {
        let removed = entries[position]
        unplace(hash: removed.record.keyHash, position: position)
        let last = entries.count - 1
        if position != last {
            // The last entry moves into the hole: its slot points there now.
            let moved = entries[last]
            let slot = self.slot(hash: moved.record.keyHash, position: last)
            slots[slot] = Self.word(hash: moved.record.keyHash, position: position)
            entries[position] = moved
        }
        entries.removeLast()
        return removed
    }

    mutating func removeAll() {
        entries = []
        slots = []
    }

    // MARK: Slots

    private static func word(hash: UInt64, position: Int) -> UInt64 {
        hash & 0xFFFF_FFFF_0000_0000 | UInt64(position + 1)
    }

    private mutating func place(hash: UInt64, position: Int) {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] != 0 { slot = (slot + 1) & mask }
        slots[slot] = Self.word(hash: hash, position: position)
    }

    /// The slot that points at `position` (whose entry's hash is `hash`).
    private func slot(hash: UInt64, position: Int) -> Int {
        let mask = slots.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while slots[slot] & 0xFFFF_FFFF != UInt64(position + 1) { slot = (slot + 1) & mask }
        return slot
    }

    /// Empties the slot pointing at `position`, shifting back the entries after it in its run so
    /// that every entry stays reachable from its home slot (linear probing needs no tombstones).
    private mutating func unplace(hash: UInt64, position: Int) {
        let mask = slots.count - 1
        var hole = slot(hash: hash, position: position)
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            let home = Int(truncatingIfNeeded: entries[Int(slots[next] & 0xFFFF_FFFF) - 1].record.keyHash) & mask
            // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
            let homeAfterHole = (home &- hole) & mask
            let nextAfterHole = (next &- hole) & mask
            if homeAfterHole == 0 || homeAfterHole > nextAfterHole {
                slots[hole] = slots[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        slots[hole] = 0
    }

    private mutating func grow() {
        slots = Array(repeating: 0, count: max(16, slots.count * 2))
        for (position, entry) in entries.enumerated() { place(hash: entry.record.keyHash, position: position) }
    }

    /// Whether two keys with the same hash are the same key: the same bytes, or equal as strings.
    static func isSameKey(_ a: String, _ b: String) -> Bool {
        hasSameBytes(a, b) || a == b
    }

    /// Whether `a` and `b` are spelled with the same UTF-8 bytes (not only canonically equivalent).
    static func hasSameBytes(_ a: String, _ b: String) -> Bool {
        let same = a.utf8.withContiguousStorageIfAvailable { a in
            b.utf8.withContiguousStorageIfAvailable { b in
                a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
            }
        }
        return same.flatMap { $0 } ?? a.utf8.elementsEqual(b.utf8)
    }
}
