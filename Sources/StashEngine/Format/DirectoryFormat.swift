import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Where a key directory stands in the segments: every record before this position is in it.
package struct DirectoryPosition: Equatable {
    package var segment: UInt32
    /// That segment's salt: a segment made anew under the same number is another one.
    var salt: UInt64
    package var offset: Int
    /// XXH64 of the segment's last bytes before `offset` (``DirectoryFormat/tailHash(_:at:)``): the
    /// segment must still hold, up to the position, what it held when the directory was written.
    var tailHash: UInt64 = 0
}

/// The key directory file (`key-directory`): a hash table of every key, read a page at a time as
/// lookups need it (each page checked against its hash in the page table at the end,
/// ``DirectoryPages``) instead of decoded, so opening builds nothing per key and reads little.
///
/// Written whole under a temporary name and renamed, never changed in place.
/// Layout: Docs/Format.md, "Key directory".
///
/// Each entry's uses (last access, recency) lie apart from its slot, in a dense array at the end of the
/// file with a hash of its own (``usesLength`` bytes a slot): a process that only reads changes no
/// slot, and writes back only that array, as a key uses file (``UsesFormat``), at close; an open that
/// takes the uses file reads it in the array's place.
///
/// It is derived data: the segments hold every record. A directory whose hashes do not verify, that
/// names another store, a segment the store no longer has (or has with another salt), a position
/// past a segment's end, or a segment whose bytes before the position are not the ones it was
/// written after (the tail hash: a copy of the store that went on writing, a tail lost to a power
/// cut and written again) is not used: the segments are replayed whole, and a writer removes it. So
/// is one of another layout (another magic): `STASHKD1` held times as seconds since 1970, and a
/// store that has one rebuilds it once.
package enum DirectoryFormat {
    package static let magic = Array("STASHKD5".utf8)
    /// The layout before this one, still read whole: as this one without the page table, with the
    /// body's hash at 80 and the uses' at 112 instead.
    static let wholeHashMagic = Array("STASHKD4".utf8)
    /// The layout before that, still read: 64-byte slots with each entry's uses in its slot.
    static let inlineUsesMagic = Array("STASHKD3".utf8)
    /// The layout before those, still read: as `STASHKD3`, but recency numbered 0…n−1 (so the next use
    /// takes n), with no next recency in the header.
    static let rankedMagic = Array("STASHKD2".utf8)
    /// The magic of the layout before (times in seconds since 1970): such a directory is older, not
    /// damaged; the store replays its segments without reporting it, and a writer replaces it.
    static let formerMagic = Array("STASHKD1".utf8)
    static let headerLength = 128
    static let slotLength = 48
    /// The slots of `STASHKD2` and `STASHKD3`, whose last 16 bytes are the entry's uses.
    static let inlineUsesSlotLength = 64
    /// An entry's uses, in the array after the slots: last access (f64), then recency (u64).
    static let usesLength = 16
    static let segmentEntryLength = 24
    /// How many bytes before the position the tail hash covers.
    static let tailWindow = 4096

    /// The tail hash of a position at `offset` of a segment whose bytes (from its start) are `bytes`
    /// (at least `offset` of them): XXH64 of the up to ``tailWindow`` bytes before it. Same salt and
    /// length are not enough: a copy of the store folder has both, and after the two went on writing
    /// a directory of one would name the other's records and skip the other's records before it.
    static func tailHash(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[max(0, offset - tailWindow)..<offset]))
    }

    /// The longest directory of a store whose segments hold `segmentBytes` bytes in `segments` files:
    /// an entry costs at most ~1.43 slots, its key and 16 bytes, and its record at least 9 bytes and its
    /// key, so 16 bytes per segment byte is more than any directory the store writes.
    static func lengthLimit(segmentBytes: Int, segments: Int) -> Int {
        let (entries, overflow) = segmentBytes.multipliedReportingOverflow(by: 16)
        return overflow ? .max : entries &+ headerLength &+ segments &* segmentEntryLength &+ 4096
    }

    /// Whether the open file `fd` starts with ``formerMagic``.
    static func isFormerLayout(_ fd: Int32) -> Bool {
        (try? FileIO.read(fd, at: 0, count: formerMagic.count, path: "")) == formerMagic
    }

    /// Slots per entry: a table at most ~70% full keeps probes short.
    static func slotCount(for count: Int) -> Int { max(8, count + count * 3 / 7 + 1) }

    /// The first slot to probe for `hash` in a table of `slotCount` slots.
    @inline(__always)
    package static func home(_ hash: UInt64, slotCount: Int) -> Int {
        Int(truncatingIfNeeded: hash.multipliedFullWidth(by: UInt64(slotCount)).high)
    }

    /// One entry to write: its key's UTF-8, its record (with its key hash) and its recency.
    typealias Visit = (_ key: UnsafeRawBufferPointer, _ record: DiskRecord, _ recency: UInt64) -> Void

    /// What the header says of a directory's entries, summed before they are written, in any order.
    struct Summary {
        var count = 0
        var arenaLength = 0
        var live: [UInt32: Int] = [:]
        var totalSize = 0
        var earliest = Double.infinity
        var maxFile: UInt64 = 0
        /// Above every entry's recency: what the next use takes once the directory is read.
        var nextRecency: UInt64 = 0

        /// Counts an entry whose key has `keyLength` bytes.
        mutating func add(keyLength: Int, _ record: DiskRecord, recency: UInt64) {
            count += 1
            nextRecency = max(nextRecency, recency &+ 1)
            arenaLength += keyLength + (record.fileID == nil ? 0 : 16)
            live[record.segment, default: 0] += FileNumber.saturating(record.length)
            totalSize += record.size
            earliest = min(earliest, record.expiry)
            maxFile = max(maxFile, record.fileID ?? 0)
        }
    }

    /// The directory of the entries `forEach` hands over least recently used first (their recency is
    /// the order they come in), at `position`: for tests and fuzzing, which have no index to sum them.
    static func encode(position: DirectoryPosition, store: UInt64, segmentSalts: [UInt32: UInt64],
                       forEach: ((_ key: UnsafeRawBufferPointer, _ record: DiskRecord) -> Void) -> Void) -> UnsafeMutableRawBufferPointer {
        var entries: [(key: [UInt8], record: DiskRecord, recency: UInt64)] = []
        forEach { key, record in entries.append((Array(key), record, UInt64(entries.count))) }
        var summary = Summary()
        for entry in entries { summary.add(keyLength: entry.key.count, entry.record, recency: entry.recency) }
        let bytes = encode(summary, position: position, store: store, segmentSalts: segmentSalts) { visit in
            for entry in entries { entry.key.withUnsafeBytes { visit($0, entry.record, entry.recency) } }
        }
        guard let bytes else { preconditionFailure("the entries did not add up") }
        return bytes
    }

    /// The directory of the entries `forEach` hands over, each with its recency, which `summary`
    /// counted, at `position`; nil if `forEach` hands over other entries than it counted. Any order
    /// makes a directory that reads right: the index hands them over as they lie in memory
    /// (``KeyDirectory/forEachEntry(writing:)``), and the keys go into the arena in that order.
    static func encode(_ summary: Summary, position: DirectoryPosition, store: UInt64, segmentSalts: [UInt32: UInt64],
                       forEach: (Visit) -> Void) -> UnsafeMutableRawBufferPointer? {
        let (count, arenaLength, live) = (summary.count, summary.arenaLength, summary.live)
        let segments = live.keys.sorted()
        let slotCount = slotCount(for: count)
        let slotsStart = headerLength + segments.count * segmentEntryLength
        let arenaStart = slotsStart + slotCount * slotLength
        let usesStart = arenaStart + arenaLength
        let usesEnd = usesStart + slotCount * usesLength
        let bytes = HugePages.allocate(byteCount: usesEnd + tableLength(usesStart: usesStart, usesEnd: usesEnd))
        // Zeros where nothing else is written (empty slots and their uses, reserved bytes); the arena is written whole.
        UnsafeMutableRawBufferPointer(rebasing: bytes[..<arenaStart]).initializeMemory(as: UInt8.self, repeating: 0)
        UnsafeMutableRawBufferPointer(rebasing: bytes[usesStart..<usesEnd]).initializeMemory(as: UInt8.self, repeating: 0)
        func put<I: FixedWidthInteger>(_ value: I, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: I.self) }
        for (number, id) in segments.enumerated() {
            put(id, headerLength + number * segmentEntryLength)
            put(segmentSalts[id] ?? 0, headerLength + number * segmentEntryLength + 8)
            put(UInt64(live[id] ?? 0), headerLength + number * segmentEntryLength + 16)
        }
        var arena = arenaStart
        var written = 0
        var matches = true
        let table = SlotTable(bytes: bytes, slotsStart: slotsStart, usesStart: usesStart, slotCount: slotCount)
        var pending = PendingSlots()
        forEach { key, record, recency in
            // Never past the table or the arena, whatever `forEach` hands over.
            guard matches, written < count, arena + key.count + (record.fileID == nil ? 0 : 16) <= usesStart else {
                matches = false
                return
            }
            let slot = PendingSlot(home: home(record.keyHash, slotCount: slotCount),
                                   words: slotWords(record, keyAt: arena - arenaStart, keyLength: key.count, recency: recency))
            table.prefetch(slot.home)
            if let due = pending.push(slot) { table.place(due) }
            written += 1
            UnsafeMutableRawBufferPointer(rebasing: bytes[arena..<(arena + key.count)]).copyMemory(from: key)
            arena += key.count
            if case .file(let id, _, let hash) = record.value {
                put(id, arena)
                put(hash, arena + 8)
                arena += 16
            }
        }
        while let due = pending.pop() { table.place(due) }
        guard matches, written == count, arena == usesStart else {
            bytes.deallocate()
            return nil
        }
        put(store, 8)
        put(UInt32(segments.count), 20)
        put(UInt64(count), 40)
        put(UInt64(slotCount), 48)
        put(UInt64(arenaLength), 56)
        put(UInt64(summary.totalSize), 64)
        put(summary.earliest.bitPattern, 72)
        put(summary.maxFile, 88)
        magic.withUnsafeBytes { bytes.copyMemory(from: $0) }
        put(position.segment, 16)
        put(position.salt, 24)
        put(UInt64(position.offset), 32)
        put(position.tailHash, 96)
        put(summary.nextRecency, 104)
        sealHashes(bytes, layout: Layout.Regions(usesStart: usesStart, usesEnd: usesEnd, pageTable: true))
        return bytes
    }

    /// Writes the page table of the directory `bytes` whose parts lie at `regions` (this layout) into `table`.
    static func hashPages(of bytes: UnsafeRawBufferPointer, _ regions: Layout.Regions, into table: UnsafeMutableRawBufferPointer) {
        hashPages(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<regions.usesStart]), into: table, from: 0)
        hashPages(UnsafeRawBufferPointer(rebasing: bytes[regions.usesStart..<regions.usesEnd]), into: table,
                  from: pageCount(regions.usesStart - headerLength))
    }

    /// Writes the hashes of the directory `bytes` whose parts lie at `regions`: in this layout every
    /// page's (the page table), the table's (80) and 0 at 112; in `STASHKD4` the body's (80) and the
    /// uses' (112); in the layouts before, the body's alone. Then the header's.
    static func sealHashes(_ bytes: UnsafeMutableRawBufferPointer, layout regions: Layout.Regions) {
        func put(_ value: UInt64, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }
        let (usesStart, usesEnd) = (regions.usesStart, regions.usesEnd)
        if regions.pageTable {
            let table = UnsafeMutableRawBufferPointer(rebasing: bytes[usesEnd...])
            hashPages(of: UnsafeRawBufferPointer(bytes), regions, into: table)
            put(XXH64.hash(UnsafeRawBufferPointer(table)), 80)
            put(0, 112)
        } else {
            put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<usesStart])), 80)
            put(usesStart == usesEnd ? 0 : XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[usesStart..<usesEnd])), 112)
        }
        put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])), 120)
    }
}
