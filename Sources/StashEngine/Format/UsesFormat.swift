/// The key uses file (`key-uses`): every entry's uses (last access, recency) of one key directory, as
/// of a later position in the segments. Layout: Docs/Format.md, "Key uses".
///
/// What a store that only read writes at close instead of its directory: the directory's array of uses
/// (``DirectoryFormat/usesLength`` bytes a slot), not every entry. Like the directory it is derived
/// data: the access records after the directory's position say the same, so a uses file that does not
/// verify, names another directory (the one it was written for was replaced), or whose position the
/// segments do not hold is ignored, and the records are replayed from the directory's position.
/// Written whole under a temporary name and renamed, never changed in place. Its body ends in a page
/// table like the directory's (``DirectoryFormat/hashPages(_:into:from:)``): its pages stand in for the
/// directory's uses pages one by one, each checked when first read.
package enum UsesFormat {
    package static let magic = Array("STASHKU2".utf8)
    /// The layout before (one hash over the body, no page table): not read; a writer removes it.
    static let formerMagic = Array("STASHKU1".utf8)
    static let headerLength = 128

    /// What a header says, once it verified.
    struct Header {
        var store: UInt64
        var position: DirectoryPosition
        /// The header hash of the directory these are the uses of (``DirectoryFormat/Header/identity``).
        var directory: UInt64
        var slotCount: Int
        var nextRecency: UInt64
        /// The page table's XXH64.
        var tableHash: UInt64
        /// Where the page table starts: after the body, the uses.
        var tableStart: Int { headerLength + slotCount * DirectoryFormat.usesLength }
    }

    /// The length of the uses file of a directory of `slotCount` slots: header, uses, page table.
    static func fileLength(slotCount: Int) -> Int {
        let body = slotCount * DirectoryFormat.usesLength
        return headerLength + body + DirectoryFormat.pageCount(body) * 8
    }

    /// The header and the page table for the uses `body` (``DirectoryFormat/usesLength`` bytes a slot)
    /// of the directory `header`, at `position`, with `nextRecency` above every recency in them: what
    /// goes before and after the body.
    static func frame(of body: UnsafeRawBufferPointer, directory header: DirectoryFormat.Header,
                      position: DirectoryPosition, nextRecency: UInt64) -> (header: [UInt8], table: [UInt8]) {
        var table = [UInt8](repeating: 0, count: DirectoryFormat.pageCount(body.count) * 8)
        table.withUnsafeMutableBytes { DirectoryFormat.hashPages(body, into: $0, from: 0) }
        var bytes = [UInt8](repeating: 0, count: headerLength)
        bytes.withUnsafeMutableBytes { bytes in
            func put<I: FixedWidthInteger>(_ value: I, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: I.self) }
            magic.withUnsafeBytes { bytes.copyMemory(from: $0) }
            put(header.store, 8)
            put(position.segment, 16)
            put(position.salt, 24)
            put(UInt64(position.offset), 32)
            put(position.tailHash, 40)
            put(header.identity, 48)
            put(UInt64(header.slotCount), 56)
            put(nextRecency, 64)
            put(table.withUnsafeBytes { XXH64.hash($0) }, 112)
            put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])), 120)
        }
        return (bytes, table)
    }

    /// The header `head` (its first ``headerLength`` bytes) of a uses file of `fileLength` bytes; nil if
    /// it is damaged, or its length is not its slots' and their page table's. Never traps. The table is
    /// checked once read, and each page of the body as it is read.
    static func parseHeader(_ head: UnsafeRawBufferPointer, fileLength: Int) -> Header? {
        guard head.count >= headerLength, head.prefix(8).elementsEqual(magic) else { return nil }
        func load<I: FixedWidthInteger>(_ offset: Int) -> I { I(littleEndian: head.loadUnaligned(fromByteOffset: offset, as: I.self)) }
        guard XXH64.hash(UnsafeRawBufferPointer(rebasing: head[0..<120])) == load(120) as UInt64 else { return nil }
        let (slotCount, offset, nextRecency) = (load(56) as UInt64, load(32) as UInt64, load(64) as UInt64)
        // Checked as Ints of this platform: where Int has 32 bits, a crafted header does not trap.
        guard let slots = FileNumber.int(slotCount), let body = FileNumber.product(slots, DirectoryFormat.usesLength),
              offset <= UInt64(UInt32.max), let position = FileNumber.int(offset), nextRecency < 1 << 62,
              body <= fileLength - headerLength, // before the sum below: a crafted count must not overflow it
              fileLength - headerLength == body + DirectoryFormat.pageCount(body) * 8 else { return nil }
        return Header(store: load(8), position: DirectoryPosition(segment: load(16), salt: load(24), offset: position, tailHash: load(40)),
                      directory: load(48), slotCount: slots, nextRecency: nextRecency, tableHash: load(112))
    }
}
