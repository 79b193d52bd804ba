import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A key directory file (``DirectoryFormat``), read into memory of its own when the store opens.
///
/// Read, not mapped: what a store believes of a file it checked must stay what it checked. A file
/// mapped (even privately) shows later writes of other programs in every page this process has not
/// written itself, so a directory rewritten in place (zeros, an older copy put back by
/// `rsync --inplace` or `dd conv=notrunc`) would answer lookups from unverified bytes and be copied
/// into the next directory. Held in memory, the bytes verified at open (the header's and the body's
/// hashes) are the bytes every later lookup reads, whatever happens to the file; a read marks its
/// entry used by writing the entry's recency and last access into its uses (the array after the slots,
/// where a key uses file's, ``UsesFormat``, are copied at open), and a change to an entry's record goes
/// to the ``KeyDirectory``'s overlay. A file that cannot be read (an I/O error, a
/// device locked under data protection) is an error, never a fault.
package final class LoadedDirectory: @unchecked Sendable {
    // @unchecked Sendable: only touched under the store's index lock.
    package let header: DirectoryFormat.Header
    private let bytes: UnsafeMutableRawBufferPointer
    /// Every slot's uses in `bytes`: last access (f64), then recency (u64), `usesStride` bytes apart
    /// from the first slot's at `uses` (16 in this layout; in the layouts before, within the 64-byte slots).
    private let uses: UnsafeMutableRawPointer
    private let usesStride: Int
    /// What the next use of an entry took when this was read: the header's, or the uses file's (the
    /// index counts on from there, ``KeyDirectory``).
    private(set) var nextRecency: UInt64

    /// Reads and verifies the directory file `fd` (closed by the caller); nil if it is not intact, or
    /// longer than `limit` bytes (a directory is never much larger than the records it indexes: a
    /// file that is, sparse or planted, is not read into memory).
    /// - Throws: An I/O error when the file cannot be read (its content then says nothing).
    package init?(fd: Int32, path: String, limit: Int) throws {
        let info = try FileIO.status(fd, path)
        guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= DirectoryFormat.headerLength,
              let length = FileNumber.int(info.st_size), length <= limit else { return nil }
        let bytes = HugePages.allocate(byteCount: length)
        do {
            // A file that changed length meanwhile is not the one measured: its hashes decide.
            guard try FileIO.read(fd, at: 0, into: bytes, path: path) == length,
                  let header = DirectoryFormat.parse(UnsafeRawBufferPointer(bytes)) else {
                bytes.deallocate()
                return nil
            }
            self.header = header
        } catch {
            bytes.deallocate()
            throw error
        }
        self.bytes = bytes
        (uses, usesStride, nextRecency) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.nextRecency)
    }

    /// A directory held in memory of its own, from `source`; nil if it is not intact (for tests and fuzzing).
    package convenience init?(copying source: UnsafeRawBufferPointer) {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: source.count, alignment: 8)
        bytes.copyMemory(from: source)
        self.init(adopting: bytes)
    }

    /// The directory `bytes`, which it now owns (a directory this store just encoded); nil if not intact.
    package init?(adopting bytes: UnsafeMutableRawBufferPointer) {
        guard let header = DirectoryFormat.parse(UnsafeRawBufferPointer(bytes)) else {
            bytes.deallocate()
            return nil
        }
        self.bytes = bytes
        self.header = header
        (uses, usesStride, nextRecency) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.nextRecency)
    }

    deinit {
        bytes.deallocate()
    }

    var slotCount: Int { header.slotCount }

    @inline(__always)
    private func load<I: FixedWidthInteger>(_ slot: Int, _ field: Int) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: header.slotsStart + slot * header.slotStride + field, as: I.self))
    }

    @inline(__always)
    private func store<I: FixedWidthInteger>(_ value: I, _ slot: Int, _ field: Int) {
        bytes.storeBytes(of: value.littleEndian, toByteOffset: header.slotsStart + slot * header.slotStride + field, as: I.self)
    }

    package func hash(at slot: Int) -> UInt64 { load(slot, 0) }
    func isOccupied(_ slot: Int) -> Bool { hash(at: slot) != 0 }
    func recency(at slot: Int) -> UInt64 { UInt64(littleEndian: uses.loadUnaligned(fromByteOffset: slot * usesStride + 8, as: UInt64.self)) }
    private func lastAccess(at slot: Int) -> Double {
        Double(bitPattern: UInt64(littleEndian: uses.loadUnaligned(fromByteOffset: slot * usesStride, as: UInt64.self)))
    }

    /// The key's UTF-8 in the arena; nil if the slot points outside it (a crafted file: never trusted).
    package func keyBytes(at slot: Int) -> UnsafeRawBufferPointer? {
        keyRange(at: slot).map { UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[$0]) }
    }

    /// Where the key of `slot` is in the file; nil if outside the arena.
    private func keyRange(at slot: Int) -> Range<Int>? {
        let reference: UInt64 = load(slot, 8)
        guard let offset = FileNumber.int(reference >> 24) else { return nil }
        let length = Int(reference & 0xff_ffff)
        guard offset <= header.arenaLength, length <= header.arenaLength - offset else { return nil }
        return (header.arenaStart + offset)..<(header.arenaStart + offset + length)
    }

    package func key(at slot: Int) -> String? {
        keyBytes(at: slot).flatMap(SegmentFormat.key)
    }

    /// The first slot from `hash`'s home on that holds `hash` and that `matches` accepts; nil at an
    /// empty slot (or after every slot, in a file crafted without one).
    private func probe(_ hash: UInt64, matches: (Int) -> Bool) -> Int? {
        var slot = DirectoryFormat.home(hash, slotCount: slotCount)
        for _ in 0..<slotCount {
            let stored = self.hash(at: slot)
            if stored == 0 { return nil }
            if stored == hash, matches(slot) { return slot }
            slot = slot + 1 == slotCount ? 0 : slot + 1
        }
        return nil
    }

    /// The slot of `key` (whose ``KeyHash`` is `hash`), or nil.
    package func find(_ key: String, hash: UInt64) -> Int? {
        probe(hash) { slot in
            guard let bytes = keyBytes(at: slot) else { return false }
            // The same bytes are the same key; other bytes may still spell it (another
            // normalization form): compared as strings then, as the index always did.
            return SegmentLog.isSameKey(bytes, key)
        }
    }

    /// The slot whose record is at `offset` of `segment`, found by its key's hash (an access record's target).
    package func find(hash: UInt64, segment: UInt32, offset: UInt32) -> Int? {
        probe(hash) { load($0, 16) as UInt32 == segment && load($0, 20) as UInt32 == offset }
    }

    /// The record in `slot`; nil if the slot is not well formed (a crafted file).
    package func record(at slot: Int) -> DiskRecord? {
        let size: UInt64 = load(slot, 32)
        let flags: UInt32 = load(slot, 28)
        guard size <= UInt64(Int.max), flags & ~1 == 0, let key = keyRange(at: slot) else { return nil }
        let value: StoredValue
        if flags & 1 != 0 {
            let end = key.upperBound
            guard end + 16 <= header.arenaStart + header.arenaLength else { return nil }
            value = .file(id: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: end, as: UInt64.self)), size: Int(size),
                          hash: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: end + 8, as: UInt64.self)))
        } else {
            value = .inline(size: Int(size))
        }
        let expiry = Double(bitPattern: load(slot, 40))
        let access = lastAccess(at: slot)
        return DiskRecord(segment: load(slot, 16), offset: load(slot, 20), length: load(slot, 24), value: value,
                          expiry: expiry.isNaN ? 0 : expiry, lastAccess: access.isNaN ? 0 : access, keyHash: hash(at: slot))
    }

    /// Points `slot` at another copy of its record (compaction moved it).
    package func move(_ slot: Int, segment: UInt32, offset: UInt32, length: UInt32) {
        store(segment, slot, 16)
        store(offset, slot, 20)
        store(length, slot, 24)
    }

    /// Marks `slot` used: its recency and last access.
    package func touch(_ slot: Int, recency: UInt64, time: Double) {
        uses.storeBytes(of: time.bitPattern.littleEndian, toByteOffset: slot * usesStride, as: UInt64.self)
        uses.storeBytes(of: recency.littleEndian, toByteOffset: slot * usesStride + 8, as: UInt64.self)
    }

    // MARK: Uses apart

    /// Takes the uses of a key uses file, `array` (its body: ``DirectoryFormat/usesLength`` bytes a
    /// slot, checked by the caller to be of this directory), in place of the ones read with the
    /// directory; the next use then takes `nextRecency` or more. Copied, so the file's bytes can go.
    func takeUses(_ array: UnsafeRawBufferPointer, nextRecency: UInt64) {
        precondition(array.count == slotCount * DirectoryFormat.usesLength, "a uses file of another directory")
        if usesStride == DirectoryFormat.usesLength {
            uses.copyMemory(from: array.baseAddress!, byteCount: array.count)
        } else {
            for slot in 0..<slotCount {
                (uses + slot * usesStride).copyMemory(from: array.baseAddress! + slot * DirectoryFormat.usesLength,
                                                     byteCount: DirectoryFormat.usesLength)
            }
        }
        self.nextRecency = max(self.nextRecency, nextRecency)
    }

    /// Calls `body` with every slot's uses as they are now, back to back (a key uses file's body): the
    /// array after the slots, or, in the layouts before, a copy gathered from the slots. Under the
    /// index lock, so that no read marks an entry used meanwhile.
    func withUsesArray<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        let length = slotCount * DirectoryFormat.usesLength
        if usesStride == DirectoryFormat.usesLength { return try body(UnsafeRawBufferPointer(start: uses, count: length)) }
        let gathered = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 8)
        defer { gathered.deallocate() }
        for slot in 0..<slotCount {
            (gathered.baseAddress! + slot * DirectoryFormat.usesLength).copyMemory(from: uses + slot * usesStride,
                                                                                  byteCount: DirectoryFormat.usesLength)
        }
        return try body(UnsafeRawBufferPointer(gathered))
    }
}
