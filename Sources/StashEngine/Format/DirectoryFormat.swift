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

/// The key directory file (`key-directory`): a hash table of every key, read whole when a store opens
/// (one or two `pread`s, three hashes) instead of decoded, so opening builds nothing per key.
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
    package static let magic = Array("STASHKD4".utf8)
    /// The layout before this one, still read: 64-byte slots with each entry's uses in its slot.
    static let inlineUsesMagic = Array("STASHKD3".utf8)
    /// The layout before that, still read: as `STASHKD3`, but recency numbered 0…n−1 (so the next use
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
        let bytes = HugePages.allocate(byteCount: usesStart + slotCount * usesLength)
        // Zeros where nothing else is written (empty slots and their uses, reserved bytes); the arena is written whole.
        UnsafeMutableRawBufferPointer(rebasing: bytes[..<arenaStart]).initializeMemory(as: UInt8.self, repeating: 0)
        UnsafeMutableRawBufferPointer(rebasing: bytes[usesStart...]).initializeMemory(as: UInt8.self, repeating: 0)
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
        sealHashes(bytes, usesStart: usesStart)
        return bytes
    }

    /// Writes the hashes of the directory `bytes`, whose array of uses starts at `usesStart` (the end
    /// of the file in the layouts before): the body's (before it), the uses' (this layout), the header's.
    static func sealHashes(_ bytes: UnsafeMutableRawBufferPointer, usesStart: Int) {
        func put(_ value: UInt64, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: UInt64.self) }
        put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<usesStart])), 80)
        put(usesStart == bytes.count ? 0 : XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[usesStart...])), 112)
        put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])), 120)
    }

    /// What a header says, once it and the body verified; nil for anything else. Never traps.
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
        var arenaStart: Int
        var arenaLength: Int
        /// What the next use of an entry takes as its recency (above every slot's).
        var nextRecency: UInt64
        /// The header's hash: what a key uses file names the directory by.
        var identity: UInt64
        /// Whether the uses are an array of their own after the arena (this layout), which a key uses file can replace.
        var hasUsesArray: Bool

        /// Bytes from one slot to the next: ``slotLength``, or ``inlineUsesSlotLength`` in the layouts before.
        var slotStride: Int { hasUsesArray ? slotLength : inlineUsesSlotLength }
        /// Bytes from one slot's uses to the next's.
        var usesStride: Int { hasUsesArray ? usesLength : inlineUsesSlotLength }
    }

    /// Whether the array of uses of the directory `bytes` (the whole file, read with `header`) is the one
    /// its header's uses hash names; true in the layouts before, which have none.
    static func usesVerify(_ bytes: UnsafeRawBufferPointer, _ header: Header) -> Bool {
        !header.hasUsesArray || XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[header.usesStart...]))
            == UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 112, as: UInt64.self))
    }

    /// Where the parts of a directory lie, as its first ``headerLength`` bytes say.
    struct Layout {
        var ranked: Bool
        var inlineUses: Bool
        var segmentCount: Int
        var count: Int
        var slotCount: Int
        var arenaLength: Int
        var totalSize: Int
        var offset: Int
        var slotsStart: Int
        var arenaStart: Int
        /// Where the array of uses starts (this layout), which the body hash stops before; the end of
        /// the file in the layouts before, whose uses are in their slots.
        var bodyEnd: Int
        var end: Int
    }

    /// The layout the header `head` (at least ``headerLength`` bytes of a file of `fileLength` bytes)
    /// describes; nil if it is damaged or describes another length, or more than an `Int` of
    /// `bitWidth` bits holds (the platform's; tests pass 32 to check a watch's limits on a 64-bit
    /// machine). `checkingHash` false: its hash is not checked (fuzzing seals crafted headers).
    static func layout(_ head: UnsafeRawBufferPointer, fileLength: Int, bitWidth: Int = Int.bitWidth, checkingHash: Bool = true) -> Layout? {
        guard head.count >= headerLength, fileLength >= headerLength else { return nil }
        let ranked = head.prefix(8).elementsEqual(rankedMagic)
        let inlineUses = ranked || head.prefix(8).elementsEqual(inlineUsesMagic)
        guard inlineUses || head.prefix(8).elementsEqual(magic) else { return nil }
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
              let end = FileNumber.sum(bodyEnd, usesBytes, bitWidth: bitWidth), fileLength == end else { return nil }
        return Layout(ranked: ranked, inlineUses: inlineUses, segmentCount: segmentCount, count: count, slotCount: slotCount,
                      arenaLength: arenaLength, totalSize: totalSize, offset: offset, slotsStart: slotsStart, arenaStart: arenaStart,
                      bodyEnd: bodyEnd, end: end)
    }

    /// The header of the directory `bytes`, the whole file, or its first bytes up to its array of uses
    /// (of a file of `fileLength` bytes; the array is then checked apart, ``usesVerify(_:_:)``); nil if
    /// it is damaged, or describes more than an `Int` of `bitWidth` bits holds.
    package static func parse(_ bytes: UnsafeRawBufferPointer, fileLength: Int? = nil, bitWidth: Int = Int.bitWidth) -> Header? {
        guard let layout = layout(bytes, fileLength: fileLength ?? bytes.count, bitWidth: bitWidth),
              bytes.count == layout.bodyEnd || bytes.count == layout.end else { return nil }
        func load<I: FixedWidthInteger>(_ offset: Int) -> I { I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        guard XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[headerLength..<layout.bodyEnd])) == load(80) as UInt64,
              layout.inlineUses || bytes.count == layout.bodyEnd
                || XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[layout.bodyEnd...])) == load(112) as UInt64 else { return nil }
        let earliest = Double(bitPattern: load(72))
        guard !earliest.isNaN else { return nil }
        let segments = (0..<layout.segmentCount).map { number in
            let at = headerLength + number * segmentEntryLength
            return (id: load(at) as UInt32, salt: load(at + 8) as UInt64, liveBytes: FileNumber.saturating((load(at + 16) as UInt64) & (1 << 48 - 1)))
        }
        return Header(store: load(8), position: DirectoryPosition(segment: load(16), salt: load(24), offset: layout.offset, tailHash: load(96)),
                      segments: segments, maxFileID: load(88), count: layout.count, slotCount: layout.slotCount, totalSize: layout.totalSize,
                      earliestExpiry: earliest, slotsStart: layout.slotsStart,
                      usesStart: layout.inlineUses ? layout.slotsStart + slotLength : layout.bodyEnd, arenaStart: layout.arenaStart,
                      arenaLength: layout.arenaLength, nextRecency: layout.ranked ? UInt64(layout.count) : load(104), identity: load(120),
                      hasUsesArray: !layout.inlineUses)
    }
}
