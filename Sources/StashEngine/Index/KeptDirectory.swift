import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A key directory kept as the store goes (``DirectoryBuilder``): a file of the key directory's layout
/// (Docs/Format.md, "Key directory"), mapped and changed in place entry by entry, so that a close
/// only seals it (its header, its segment list, its page table) and gives it its name.
///
/// Its parts have room to grow: slots for ``capacity`` entries (at most 70% full), an arena of
/// ``arenaCapacity`` bytes (keys no slot names any more stay there until the file is made anew),
/// and room for ``segmentRoom`` segments in the list, the last one listed repeated to fill it. When
/// one is full the builder makes a larger file and moves every entry into it.
///
/// The file has no name until it is sealed (Linux's `O_TMPFILE`): no other program can cut it short
/// under the mapping, and a crash leaves nothing behind. Its blocks are reserved when it is made
/// (`posix_fallocate`), so a full disk is an error then, never a fault in a store to the mapping.
/// Touched by its builder's thread alone.
final class KeptDirectory {
    let fd: Int32
    private let bytes: UnsafeMutableRawBufferPointer
    private let table: DirectoryFormat.SlotTable
    let capacity: Int
    let slotCount: Int
    let arenaCapacity: Int
    let segmentRoom: Int
    private let arenaStart: Int
    let usesEnd: Int
    /// The file's length once sealed: its page table ends it.
    var fileLength: Int { usesEnd + DirectoryFormat.tableLength(usesStart: table.usesStart, usesEnd: usesEnd) }

    /// The live entries, and what the header says of them.
    private(set) var count = 0
    private(set) var liveBySegment: [UInt32: Int] = [:]
    private(set) var totalSize = 0
    /// At or below every live entry's expiry (removals do not raise it: a lower bound, as the store's).
    private(set) var earliestExpiry = Double.infinity
    private(set) var maxFileID: UInt64 = 0
    /// Arena bytes written, and those of live entries.
    private(set) var arenaUsed = 0
    private(set) var arenaLive = 0
    /// Arena bytes whose blocks are reserved.
    private var arenaReserved = 0

    /// A file in `folder` for `capacity` entries, `arenaCapacity` bytes of keys and `segmentRoom`
    /// segments; nil where the platform or file system has no unnamed files, or no room.
    init?(in folder: FolderHandle, capacity: Int, arenaCapacity: Int, segmentRoom: Int) {
        #if os(Linux)
        let slotCount = DirectoryFormat.slotCount(for: capacity)
        let slotsStart = DirectoryFormat.headerLength + segmentRoom * DirectoryFormat.segmentEntryLength
        let arenaStart = slotsStart + slotCount * DirectoryFormat.slotLength
        let usesStart = arenaStart + arenaCapacity
        let usesEnd = usesStart + slotCount * DirectoryFormat.usesLength
        guard let fd = folder.openUnnamedFile() else { return nil }
        // The arena's blocks are reserved as keys come (``reserveArena(_:)``): the rest of it stays a hole.
        guard posix_fallocate(fd, 0, off_t(arenaStart)) == 0, posix_fallocate(fd, off_t(usesStart), off_t(usesEnd - usesStart)) == 0,
              let address = mmap(nil, usesEnd, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), address != MAP_FAILED else {
            FileIO.closeDescriptor(fd)
            return nil
        }
        self.fd = fd
        bytes = UnsafeMutableRawBufferPointer(start: address, count: usesEnd)
        table = DirectoryFormat.SlotTable(bytes: bytes, slotsStart: slotsStart, usesStart: usesStart, slotCount: slotCount)
        (self.capacity, self.slotCount, self.arenaCapacity, self.segmentRoom) = (capacity, slotCount, arenaCapacity, segmentRoom)
        (self.arenaStart, self.usesEnd) = (arenaStart, usesEnd)
        #else
        return nil
        #endif
    }

    deinit {
        BackgroundRelease.unmap(bytes)
        BackgroundRelease.close(fd) // the file goes with its last reference: off this thread, as a replaced one does
    }

    // MARK: Slots

    private func word(_ slot: Int, _ field: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: table.slotsStart + slot * DirectoryFormat.slotLength + field, as: UInt64.self))
    }

    private func words(_ slot: Int) -> DirectoryFormat.PendingSlot.Words {
        let uses = table.usesStart + slot * DirectoryFormat.usesLength
        func use(_ field: Int) -> UInt64 { UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: uses + field, as: UInt64.self)) }
        return (word(slot, 0), word(slot, 8), word(slot, 16), word(slot, 24), word(slot, 32), word(slot, 40), use(0), use(8))
    }

    private func next(_ slot: Int) -> Int { slot + 1 == slotCount ? 0 : slot + 1 }

    /// The slot of the entry whose key hash is `hash` and whose record is at `offset` of `segment`.
    func find(hash: UInt64, segment: UInt32, offset: UInt32) -> Int? {
        let position = UInt64(segment) | UInt64(offset) << 32
        var slot = DirectoryFormat.home(hash, slotCount: slotCount)
        while true {
            let stored = word(slot, 0)
            if stored == 0 { return nil }
            if stored == hash, word(slot, 16) == position { return slot }
            slot = next(slot)
        }
    }

    /// The key of `slot` (and its value file's reference after it, where it has one), in the arena.
    private func keyBytes(_ slot: Int) -> UnsafeRawBufferPointer {
        let reference = word(slot, 8)
        let start = arenaStart + Int(reference >> 24)
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start + Int(reference & 0xff_ffff))])
    }

    /// Writes `key` (and the value file's reference of `record`, if it has one) at the end of the arena;
    /// returns its offset there, or nil if the arena has no room.
    private func appendKey(_ key: UnsafeRawBufferPointer, for record: DiskRecord) -> Int? {
        let length = key.count + (record.fileID == nil ? 0 : 16)
        guard reserveArena(length) else { return nil }
        let at = arenaUsed
        UnsafeMutableRawBufferPointer(rebasing: bytes[(arenaStart + at)..<(arenaStart + at + key.count)]).copyMemory(from: key)
        if case .file(let id, _, let hash) = record.value {
            bytes.storeBytes(of: id.littleEndian, toByteOffset: arenaStart + at + key.count, as: UInt64.self)
            bytes.storeBytes(of: hash.littleEndian, toByteOffset: arenaStart + at + key.count + 8, as: UInt64.self)
        }
        arenaUsed += length
        arenaLive += length
        return at
    }

    /// Whether `length` more bytes fit in the arena, their blocks reserved (a MiB ahead at a time, so
    /// that the file takes no more room than its keys, and a full disk is an error here, never a fault).
    private func reserveArena(_ length: Int) -> Bool {
        let end = arenaUsed + length
        guard end <= arenaCapacity else { return false }
        guard end > arenaReserved else { return true }
        #if os(Linux)
        let reserved = min(arenaCapacity, end + (1 << 20))
        guard posix_fallocate(fd, off_t(arenaStart + arenaReserved), off_t(reserved - arenaReserved)) == 0 else { return false }
        arenaReserved = reserved
        return true
        #else
        return false
        #endif
    }

    // MARK: Changes

    /// Adds the entry `key`, which the file does not hold; false if it has no room (then unchanged).
    func insert(key: UnsafeRawBufferPointer, _ record: DiskRecord, recency: UInt64) -> Bool {
        guard count < capacity, let at = appendKey(key, for: record) else { return false }
        let words = DirectoryFormat.slotWords(record, keyAt: at, keyLength: key.count, recency: recency)
        table.place(DirectoryFormat.PendingSlot(home: DirectoryFormat.home(record.keyHash, slotCount: slotCount), words: words))
        add(words, fileID: record.fileID ?? 0)
        return true
    }

    /// Gives the entry in `slot` the record `record`, the key `key` (the index's spelling) and `recency`;
    /// false if the arena has no room for the key anew (then unchanged).
    func replace(_ slot: Int, key: UnsafeRawBufferPointer, _ record: DiskRecord, recency: UInt64) -> Bool {
        let old = words(slot)
        let oldKey = keyBytes(slot)
        var at = Int(old.1 >> 24)
        // The key's bytes, and room for a value file's reference after them, kept where they are if they can be.
        let hadFile = old.3 >> 32 & 1 != 0
        if !oldKey.elementsEqual(key) || (record.fileID != nil && !hadFile) {
            guard let fresh = appendKey(key, for: record) else { return false }
            arenaLive -= oldKey.count + (hadFile ? 16 : 0)
            at = fresh
        } else if case .file(let id, _, let hash) = record.value {
            bytes.storeBytes(of: id.littleEndian, toByteOffset: arenaStart + at + key.count, as: UInt64.self)
            bytes.storeBytes(of: hash.littleEndian, toByteOffset: arenaStart + at + key.count + 8, as: UInt64.self)
        } else if hadFile {
            arenaLive -= 16 // the old reference stays, named by no slot
        }
        subtract(old)
        let words = DirectoryFormat.slotWords(record, keyAt: at, keyLength: key.count, recency: recency)
        table.write(words, at: slot)
        add(words, fileID: record.fileID ?? 0)
        return true
    }

    /// Marks the entry in `slot` used.
    func touch(_ slot: Int, recency: UInt64, time: Double) {
        let uses = table.usesStart + slot * DirectoryFormat.usesLength
        bytes.storeBytes(of: time.bitPattern.littleEndian, toByteOffset: uses, as: UInt64.self)
        bytes.storeBytes(of: recency.littleEndian, toByteOffset: uses + 8, as: UInt64.self)
    }

    /// Points the entry in `slot` at another copy of its record.
    func move(_ slot: Int, to record: DiskRecord) {
        var words = self.words(slot)
        countLive(words, -1)
        words.2 = UInt64(record.segment) | UInt64(record.offset) << 32
        words.3 = words.3 & ~0xFFFF_FFFF | UInt64(record.length)
        table.write(words, at: slot)
        countLive(words, 1)
    }

    /// Removes the entry in `slot`, moving back the entries after it in its run so that each stays
    /// reachable from its home slot (linear probing needs no tombstones).
    func remove(_ slot: Int) {
        let old = words(slot)
        subtract(old)
        arenaLive -= Int(old.1 & 0xff_ffff) + (old.3 >> 32 & 1 != 0 ? 16 : 0)
        var hole = slot
        var next = self.next(slot)
        while word(next, 0) != 0 {
            let home = DirectoryFormat.home(word(next, 0), slotCount: slotCount)
            // The entry at `next` may fill the hole unless its home lies cyclically in (hole, next].
            let homeAfterHole = (home - hole + slotCount) % slotCount
            let nextAfterHole = (next - hole + slotCount) % slotCount
            if homeAfterHole == 0 || homeAfterHole > nextAfterHole {
                table.write(words(next), at: hole)
                hole = next
            }
            next = self.next(next)
        }
        table.write((0, 0, 0, 0, 0, 0, 0, 0), at: hole)
    }

    /// Counts the entry of slot `words` (count, live bytes, size, expiry), whose value file's number,
    /// if it has one, is `fileID`.
    private func add(_ words: DirectoryFormat.PendingSlot.Words, fileID: UInt64) {
        count += 1
        countLive(words, 1)
        totalSize += Int(words.4)
        earliestExpiry = min(earliestExpiry, Double(bitPattern: words.5))
        maxFileID = max(maxFileID, fileID)
    }

    /// Takes away what the entry of slot `words` counted for (count, live bytes, size).
    private func subtract(_ words: DirectoryFormat.PendingSlot.Words) {
        count -= 1
        countLive(words, -1)
        totalSize -= Int(words.4)
    }

    /// Adds (`sign` 1) or takes away (-1) the record length of slot `words` to its segment's live bytes.
    private func countLive(_ words: DirectoryFormat.PendingSlot.Words, _ sign: Int) {
        let segment = UInt32(truncatingIfNeeded: words.2)
        let live = liveBySegment[segment, default: 0] + sign * FileNumber.saturating(UInt32(truncatingIfNeeded: words.3))
        liveBySegment[segment] = live == 0 ? nil : live
    }

    /// Hands every entry to `body`: its key (with its value file's reference), slot words and uses.
    func forEachEntry(_ body: (_ key: UnsafeRawBufferPointer, _ words: DirectoryFormat.PendingSlot.Words) -> Void) {
        for slot in 0..<slotCount where word(slot, 0) != 0 {
            let words = words(slot)
            let start = arenaStart + Int(words.1 >> 24)
            let length = Int(words.1 & 0xff_ffff) + (words.3 >> 32 & 1 != 0 ? 16 : 0)
            body(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + length)]), words)
        }
    }

    /// Adds an entry of another kept directory (``forEachEntry(_:)``); false if there is no room.
    func insert(moving keyAndFile: UnsafeRawBufferPointer, words: DirectoryFormat.PendingSlot.Words) -> Bool {
        let keyLength = Int(words.1 & 0xff_ffff)
        guard count < capacity, reserveArena(keyAndFile.count) else { return false }
        let at = arenaUsed
        UnsafeMutableRawBufferPointer(rebasing: bytes[(arenaStart + at)..<(arenaStart + at + keyAndFile.count)]).copyMemory(from: keyAndFile)
        (arenaUsed, arenaLive) = (arenaUsed + keyAndFile.count, arenaLive + keyAndFile.count)
        var moved = words
        moved.1 = UInt64(at) << 24 | UInt64(keyLength)
        table.place(DirectoryFormat.PendingSlot(home: DirectoryFormat.home(words.0, slotCount: slotCount), words: moved))
        let hasFile = words.3 >> 32 & 1 != 0
        add(moved, fileID: hasFile ? UInt64(littleEndian: keyAndFile.loadUnaligned(fromByteOffset: keyLength, as: UInt64.self)) : 0)
        return true
    }

    // MARK: Sealing

    /// Writes the page table into `pageTable`: each page's hash, as ``DirectoryFormat/hashPages(of:_:into:)``
    /// does, but for the pages past the arena's last key, which no store reached: zeros since the file was
    /// made (its blocks reserved, never written), whose hashes need no reading.
    private func hashPages(into pageTable: UnsafeMutableRawBufferPointer) {
        let (pageLength, headerLength) = (DirectoryFormat.pageLength, DirectoryFormat.headerLength)
        let bodyPages = DirectoryFormat.pageCount(table.usesStart - headerLength)
        let written = min(bodyPages, DirectoryFormat.pageCount(arenaStart + arenaUsed - headerLength))
        let region = UnsafeRawBufferPointer(rebasing: bytes[headerLength..<min(table.usesStart, headerLength + written * pageLength)])
        DirectoryFormat.hashPages(region, into: pageTable, from: 0)
        let zeros = [UInt8](repeating: 0, count: pageLength)
        let zeroHash = zeros.withUnsafeBytes { DirectoryFormat.pageHash($0) }
        for page in written..<bodyPages {
            let length = min(pageLength, table.usesStart - headerLength - page * pageLength)
            let hash = length == pageLength ? zeroHash : zeros.withUnsafeBytes { DirectoryFormat.pageHash(UnsafeRawBufferPointer(rebasing: $0[..<length])) }
            pageTable.storeBytes(of: hash.littleEndian, toByteOffset: page * 8, as: UInt64.self)
        }
        DirectoryFormat.hashPages(UnsafeRawBufferPointer(rebasing: bytes[table.usesStart..<usesEnd]), into: pageTable, from: bodyPages)
    }

    /// The header, segment list and page table of the entries as they are now, at `position`, with
    /// `nextRecency`; `segments` the store's (salts by number). False if the list has no room for them.
    func seal(position: DirectoryPosition, store: UInt64, salts: [UInt32: UInt64], nextRecency: UInt64) throws -> Bool {
        let listed = liveBySegment.filter { $0.value > 0 }.keys.sorted()
        guard let last = listed.last, listed.count <= segmentRoom else { return false }
        func put<I: FixedWidthInteger>(_ value: I, _ offset: Int) { bytes.storeBytes(of: value.littleEndian, toByteOffset: offset, as: I.self) }
        for number in 0..<segmentRoom {
            let id = number < listed.count ? listed[number] : last // the room filled with the last one again
            let at = DirectoryFormat.headerLength + number * DirectoryFormat.segmentEntryLength
            put(id, at)
            put(salts[id] ?? 0, at + 8)
            put(UInt64(liveBySegment[id] ?? 0), at + 16)
        }
        var pageTable = [UInt8](repeating: 0, count: DirectoryFormat.tableLength(usesStart: table.usesStart, usesEnd: usesEnd))
        pageTable.withUnsafeMutableBytes(hashPages)
        try pageTable.withUnsafeBytes { try FileIO.writeAll(fd, $0, at: usesEnd, path: "key directory kept as the store went") }
        DirectoryFormat.magic.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[0..<8]).copyMemory(from: $0) }
        put(store, 8)
        put(position.segment, 16)
        put(UInt32(segmentRoom), 20)
        put(position.salt, 24)
        put(UInt64(position.offset), 32)
        put(UInt64(count), 40)
        put(UInt64(slotCount), 48)
        put(UInt64(arenaCapacity), 56)
        put(UInt64(totalSize), 64)
        put(earliestExpiry.bitPattern, 72)
        put(pageTable.withUnsafeBytes { XXH64.hash($0) }, 80)
        put(maxFileID, 88)
        put(position.tailHash, 96)
        put(nextRecency, 104)
        put(UInt64(0), 112)
        put(XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[0..<120])), 120)
        return true
    }
}
