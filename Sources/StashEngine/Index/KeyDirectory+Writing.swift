/// What a new key directory file is written from: the index's entries in writing order, the header's
/// totals, and the live bytes per segment (Docs/Format.md, "Key directory").
extension KeyDirectory {
    /// Whether nothing but uses (recency, last access) changed since the base was read: no entry
    /// written, removed or moved. The base's uses are then all a close writes (``LoadedDirectory/usesArray``, a key uses file).
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

    /// What a new directory's header says of the live entries, summed before they are written.
    func directorySummary() -> DirectoryFormat.Summary {
        var summary = DirectoryFormat.Summary()
        if let base {
            for slot in 0..<base.slotCount where base.isOccupied(slot) && !isShadowed(slot) {
                if let key = base.keyBytes(at: slot), let record = base.record(at: slot) {
                    summary.add(keyLength: key.count, record, recency: base.recency(at: slot))
                }
            }
        }
        overlay.forEachEntryBytes { key, record, recency in summary.add(keyLength: key.count, record, recency: recency) }
        return summary
    }

    /// Hands every live entry to `visit` with its key's UTF-8 and recency, in the order a new directory
    /// is written in: the base's slots front to back, then the entries written since, as they lie in
    /// memory. Both are read front to back: visited least recently used first, as directories were
    /// written before, a million entries jumped about a ~90 MB base (most of a close's time). The base's
    /// slots start after its first empty one: entries that wrapped past the table's end come after the
    /// last ones, so a base written again alone keeps each entry in its slot. A base slot that is not
    /// well formed (a crafted file) is left out.
    func forEachEntry(writing visit: DirectoryFormat.Visit) {
        if let base, base.slotCount > 0 {
            // A crafted file may have no empty slot: every slot then, from the first.
            let empty = (0..<base.slotCount).first { !base.isOccupied($0) } ?? base.slotCount - 1
            for step in 1...base.slotCount {
                let slot = (empty + step) % base.slotCount
                guard base.isOccupied(slot), !isShadowed(slot), let key = base.keyBytes(at: slot), let record = base.record(at: slot) else { continue }
                visit(key, record, base.recency(at: slot))
            }
        }
        overlay.forEachEntryBytes(visit)
    }
}
