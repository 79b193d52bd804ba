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
        forEach { key, record, recency in
            // Never past the table or the arena, whatever `forEach` hands over.
            guard matches, written < count, arena + key.count + (record.fileID == nil ? 0 : 16) <= usesStart else {
                matches = false
                return
            }
            var slot = home(record.keyHash, slotCount: slotCount)
            while (bytes.load(fromByteOffset: slotsStart + slot * slotLength, as: UInt64.self)) != 0 {
                slot = slot + 1 == slotCount ? 0 : slot + 1
            }
            let at = slotsStart + slot * slotLength
            put(record.keyHash, at)
            put(UInt64(arena - arenaStart) << 24 | UInt64(key.count), at + 8)
            put(record.segment, at + 16)
            put(record.offset, at + 20)
            put(record.length, at + 24)
            put(UInt32(record.fileID == nil ? 0 : 1), at + 28)
            put(UInt64(record.size), at + 32)
            put(record.expiry.bitPattern, at + 40)
            put(record.lastAccess.bitPattern, usesStart + slot * usesLength)
            put(recency, usesStart + slot * usesLength + 8)
            written += 1
            UnsafeMutableRawBufferPointer(rebasing: bytes[arena..<(arena + key.count)]).copyMemory(from: key)
            arena += key.count
            if case .file(let id, _, let hash) = record.value {
                put(id, arena)
                put(hash, arena + 8)
                arena += 16
            }
        }
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

    /// Writes the hashes of the directory `bytes` whose parts lie at `regions`: in this layout every
    /// page's (the page table), the table's (80) and 0 at 112; in `STASHKD4` the body's (80) and the
    /// uses' (112); in the layouts before, the body's alone. Then the header's.
    static func sealHashes(_ bytes: UnsafeMutableRawBufferPointer, layout regions: Layout.Regions) {
        func put(_ value: UInt64, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }
        let (usesStart, usesEnd) = (regions.usesStart, regions.usesEnd)
        if regions.pageTable {
            let table = UnsafeMutableRawBufferPointer(rebasing: bytes[usesEnd...])
            hashPages(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<usesStart]), into: table, from: 0)
            hashPages(UnsafeRawBufferPointer(rebasing: bytes[usesStart..<usesEnd]), into: table, from: pageCount(usesStart - headerLength))
            put(XXH64.hash(UnsafeRawBufferPointer(table)), 80)
            put(0, 112)
        } else {
            put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<usesStart])), 80)
            put(usesStart == usesEnd ? 0 : XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[usesStart..<usesEnd])), 112)
        }
        put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])), 120)
    }

    /// What a header says, once it verified (and the body, or in this layout the page table); nil for anything else. Never traps.
    package struct Header {
        package var store: UInt64
        package var position: DirectoryPosition
        package var segments: [(id: UInt32, salt: UInt64, liveBytes: Int)]
        var maxFileID: UInt64
        package var count: Int
        var slotCount: Int
        package var totalSize: Int
        package var earliestExpiry: Double
        var slotsStart: Int
        /// Where the first slot's uses are (in its slot, in the layouts before).
        var usesStart: Int
        /// Where the array of uses ends: the page table's start in this layout.
        var usesEnd: Int
        var arenaStart: Int
        var arenaLength: Int
        /// What the next use of an entry takes as its recency (above every slot's).
        var nextRecency: UInt64
        /// The header's hash: what a key uses file names the directory by.
        var identity: UInt64
        /// Whether the uses are an array of their own after the arena (`STASHKD4` and this layout).
        var hasUsesArray: Bool
        /// Whether the file ends in a page table (this layout): its pages can be checked one at a time,
        /// and a key uses file can stand in for its uses.
        var hasPageTable: Bool

        /// Bytes from one slot to the next: ``slotLength``, or ``inlineUsesSlotLength`` in the layouts before.
        var slotStride: Int { hasUsesArray ? slotLength : inlineUsesSlotLength }
        /// Bytes from one slot's uses to the next's.
        var usesStride: Int { hasUsesArray ? usesLength : inlineUsesSlotLength }
    }

    /// Where the parts of a directory lie, as its first ``headerLength`` bytes say.
    struct Layout {
        var ranked: Bool
        var inlineUses: Bool
        var pageTable: Bool
        var segmentCount: Int
        var count: Int
        var slotCount: Int
        var arenaLength: Int
        var totalSize: Int
        var offset: Int
        var slotsStart: Int
        var arenaStart: Int
        /// Where the array of uses starts: the end of the body; the end of the file in the layouts
        /// before `STASHKD4`, whose uses are in their slots.
        var bodyEnd: Int
        /// Where the array of uses ends: the page table's start (this layout), the file's end (`STASHKD4`).
        var usesEnd: Int
        var end: Int

        /// The parts the hashes cover.
        struct Regions {
            var usesStart: Int
            var usesEnd: Int
            var pageTable: Bool
        }

        var regions: Regions { Regions(usesStart: bodyEnd, usesEnd: usesEnd, pageTable: pageTable) }
    }

    /// The layout the header `head` (at least ``headerLength`` bytes of a file of `fileLength` bytes)
    /// describes; nil if it is damaged or describes another length, or more than an `Int` of
    /// `bitWidth` bits holds (the platform's; tests pass 32 to check a watch's limits on a 64-bit
    /// machine). `checkingHash` false: its hash is not checked (fuzzing seals crafted headers).
    static func layout(_ head: UnsafeRawBufferPointer, fileLength: Int, bitWidth: Int = Int.bitWidth, checkingHash: Bool = true) -> Layout? {
        guard head.count >= headerLength, fileLength >= headerLength else { return nil }
        let ranked = head.prefix(8).elementsEqual(rankedMagic)
        let inlineUses = ranked || head.prefix(8).elementsEqual(inlineUsesMagic)
        let pageTable = head.prefix(8).elementsEqual(magic)
        guard inlineUses || pageTable || head.prefix(8).elementsEqual(wholeHashMagic) else { return nil }
        func load<I: FixedWidthInteger>(_ offset: Int) -> I { I(littleEndian: head.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        guard !checkingHash || XXH64.hash(UnsafeRawBufferPointer(rebasing: head[0..<120])) == load(120) as UInt64 else { return nil }
        let (count64, slotCount64, arenaLength64, totalSize64, offset64) = (load(40) as UInt64, load(48) as UInt64, load(56) as UInt64,
                                                                            load(64) as UInt64, load(32) as UInt64)
        // Sizes bounded before any sum, so nothing overflows: a directory describes less than 2⁴⁰ bytes.
        guard slotCount64 < 1 << 32, count64 < slotCount64, arenaLength64 < 1 << 40, totalSize64 < 1 << 62, offset64 <= UInt64(UInt32.max),
              ranked || (load(104) as UInt64) < 1 << 62 else { return nil } // the next recency: counted on from, never to overflow
        // Each as an Int of this platform (checked: where Int has 32 bits, a crafted header does not trap).
        guard let segmentCount = FileNumber.int(load(20) as UInt32, bitWidth: bitWidth),
              let count = FileNumber.int(count64, bitWidth: bitWidth), let slotCount = FileNumber.int(slotCount64, bitWidth: bitWidth),
              let arenaLength = FileNumber.int(arenaLength64, bitWidth: bitWidth), let totalSize = FileNumber.int(totalSize64, bitWidth: bitWidth),
              let offset = FileNumber.int(offset64, bitWidth: bitWidth),
              segmentCount <= (fileLength - headerLength) / segmentEntryLength else { return nil }
        let slotsStart = headerLength + segmentCount * segmentEntryLength
        guard let slotsLength = FileNumber.product(slotCount, inlineUses ? inlineUsesSlotLength : slotLength, bitWidth: bitWidth),
              let usesBytes = FileNumber.product(slotCount, inlineUses ? 0 : usesLength, bitWidth: bitWidth),
              let arenaStart = FileNumber.sum(slotsStart, slotsLength, bitWidth: bitWidth),
              let bodyEnd = FileNumber.sum(arenaStart, arenaLength, bitWidth: bitWidth),
              let usesEnd = FileNumber.sum(bodyEnd, usesBytes, bitWidth: bitWidth),
              let end = FileNumber.sum(usesEnd, pageTable ? tableLength(usesStart: bodyEnd, usesEnd: usesEnd) : 0, bitWidth: bitWidth),
              fileLength == end else { return nil }
        return Layout(ranked: ranked, inlineUses: inlineUses, pageTable: pageTable, segmentCount: segmentCount, count: count,
                      slotCount: slotCount, arenaLength: arenaLength, totalSize: totalSize, offset: offset, slotsStart: slotsStart,
                      arenaStart: arenaStart, bodyEnd: bodyEnd, usesEnd: usesEnd, end: end)
    }

    /// Whether the whole directory `bytes` of `layout` has the hashes its header names: in this layout
    /// the page table's and every page's; in `STASHKD4` the body's and the uses'; before, the body's.
    static func verify(_ bytes: UnsafeRawBufferPointer, _ layout: Layout) -> Bool {
        func load(_ offset: Int) -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        let body = UnsafeRawBufferPointer(rebasing: bytes[headerLength..<layout.bodyEnd])
        let uses = UnsafeRawBufferPointer(rebasing: bytes[layout.bodyEnd..<layout.usesEnd])
        guard layout.pageTable else {
            return XXH64.hash(body) == load(80) && (layout.inlineUses || XXH64.hash(uses) == load(112))
        }
        let table = UnsafeRawBufferPointer(rebasing: bytes[layout.usesEnd..<layout.end])
        return XXH64.hash(table) == load(80) && pagesVerify(body, table: table, from: 0)
            && pagesVerify(uses, table: table, from: pageCount(body.count))
    }

    /// The header of the directory `bytes`, the whole file (of `fileLength` bytes, if `bytes` is not), of
    /// any layout, once its hashes verified; nil if it is damaged, or describes more than an `Int` of
    /// `bitWidth` bits holds.
    package static func parse(_ bytes: UnsafeRawBufferPointer, bitWidth: Int = Int.bitWidth) -> Header? {
        guard let layout = layout(bytes, fileLength: bytes.count, bitWidth: bitWidth), verify(bytes, layout) else { return nil }
        return header(bytes, layout)
    }

    /// What the header and segment list in `bytes` (at least up to the slots) say, for `layout`: the
    /// hashes that cover them already checked. Nil if a field is out of range.
    static func header(_ bytes: UnsafeRawBufferPointer, _ layout: Layout) -> Header? {
        guard bytes.count >= layout.slotsStart else { return nil }
        func load<I: FixedWidthInteger>(_ offset: Int) -> I { I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        let earliest = Double(bitPattern: load(72))
        guard !earliest.isNaN else { return nil }
        let segments = (0..<layout.segmentCount).map { number in
            let at = headerLength + number * segmentEntryLength
            return (id: load(at) as UInt32, salt: load(at + 8) as UInt64, liveBytes: FileNumber.saturating((load(at + 16) as UInt64) & (1 << 48 - 1)))
        }
        return Header(store: load(8), position: DirectoryPosition(segment: load(16), salt: load(24), offset: layout.offset, tailHash: load(96)),
                      segments: segments, maxFileID: load(88), count: layout.count, slotCount: layout.slotCount, totalSize: layout.totalSize,
                      earliestExpiry: earliest, slotsStart: layout.slotsStart,
                      usesStart: layout.inlineUses ? layout.slotsStart + slotLength : layout.bodyEnd, usesEnd: layout.usesEnd,
                      arenaStart: layout.arenaStart, arenaLength: layout.arenaLength,
                      nextRecency: layout.ranked ? UInt64(layout.count) : load(104), identity: load(120),
                      hasUsesArray: !layout.inlineUses, hasPageTable: layout.pageTable)
    }
}
