/// What a new key directory file is written from: the index's entries in writing order, the header's
/// totals, and the live bytes per segment (Docs/Format.md, "Key directory").
extension KeyDirectory {
    /// Whether nothing but uses (recency, last access) changed since the base was read: no entry
    /// written, removed or moved. The base's own bytes are then the next directory (``LoadedDirectory/resealed(at:nextRecency:)``).
    var changedOnlyUses: Bool {
        base != nil && overlay.isEmpty && shadowed.isEmpty && !basePositionsMoved
    }

    /// Live record bytes per segment.
    func liveBytesBySegment() -> [UInt32: Int] {
        var live: [UInt32: Int] = [:]
        if basePositionsMoved {
            forEachValue { live[$0.segment, default: 0] += FileNumber.saturating($0.length) }
            return live
        }
        if let base {
            for segment in base.header.segments { live[segment.id] = segment.liveBytes }
            for (word, bits) in shadowed.enumerated() where bits != 0 {
                for bit in 0..<64 where bits & (1 << UInt64(bit)) != 0 {
                    if let record = base.record(at: word << 6 | bit) { live[record.segment, default: 0] -= FileNumber.saturating(record.length) }
                }
            }
        }
        for entry in overlay.entries { live[entry.record.segment, default: 0] += FileNumber.saturating(entry.record.length) }
        return live.filter { $0.value > 0 }
    }

    /// Every live entry in key-hash order, as its hash and where it is (a base slot, or `~position` in
    /// the overlay): what a new directory file is written from (``forEach(_:writing:)``), sorted once.
    /// Two integers an entry, so that sorting a million of them moves no key or record.
    ///
    /// Key-hash order is the new table's slot order (a key's home slot grows with its hash), so the
    /// new file's slots and keys are written front to back, and a base written so lies in that order
    /// already (but for the last keys, wrapped to the table's start): read front to back too, and
    /// sorted as the long run it is. The order entries were used in would place each at random in a
    /// table of ~90 MB at a million entries (most of a close's time before).
    func writingOrder() -> [(hash: UInt64, place: Int)] {
        var all: [(hash: UInt64, place: Int)] = []
        all.reserveCapacity(count)
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                all.append((base.hash(at: slot), slot))
            }
        }
        for (position, entry) in overlay.entries.enumerated() { all.append((entry.record.keyHash, ~position)) }
        all.sort { $0.hash < $1.hash }
        return all
    }

    /// What a new directory's header says of the live entries, summed in the order they lie in memory
    /// (the base's slots one after the other), not in ``writingOrder()``'s, which jumps about the base.
    func directorySummary() -> DirectoryFormat.Summary {
        var summary = DirectoryFormat.Summary()
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                if let key = base.keyBytes(at: slot), let record = base.record(at: slot) {
                    summary.add(keyLength: key.count, record, recency: base.recency(at: slot))
                }
            }
        }
        for entry in overlay.entries { summary.add(keyLength: entry.key.utf8.count, entry.record, recency: entry.recency) }
        return summary
    }

    /// Hands each entry of `order` (``writingOrder()``, the index unchanged since) to `visit` with its
    /// key's UTF-8; a base slot that is not well formed (a crafted file) is left out.
    func forEach(_ order: [(hash: UInt64, place: Int)], writing visit: DirectoryFormat.Visit) {
        for (_, place) in order {
            if place >= 0 {
                if let base, let key = base.keyBytes(at: place), let record = base.record(at: place) {
                    visit(key, record, base.recency(at: place))
                }
            } else {
                var key = overlay.entries[~place].key
                let (record, recency) = (overlay.entries[~place].record, overlay.entries[~place].recency)
                key.withUTF8 { visit(UnsafeRawBufferPointer($0), record, recency) }
            }
        }
    }
}
