// Reading a key directory: what its header says, where its parts lie, and its hashes checked
// (Docs/Format.md, "Key directory").

extension DirectoryFormat {
    /// What a header says, once its hashes verified (the body's, or in this layout the page table's).
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
