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
/// entry used by writing the entry's recency and last access into its uses (the array at the end, read
/// from a key uses file, ``UsesFormat``, where one was taken), and a change to an entry's record goes
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
    /// Bytes from one slot to the next (``DirectoryFormat/Header/slotStride``), kept for the lookups' loads.
    private let slotStride: Int
    /// What the next use of an entry took when this was read: the header's, or the uses file's (the
    /// index counts on from there, ``KeyDirectory``).
    let nextRecency: UInt64
    /// The key uses file whose uses were read in place of the directory's, if one was.
    let usesTaken: UsesFormat.Header?
    /// Whether a key uses file was offered but its uses did not verify (the directory's own were read).
    let usesRejected: Bool

    /// A key uses file offered to an open: its descriptor (closed by the caller) and what its header said.
    package struct UsesFile {
        let fd: Int32
        let path: String
        let header: UsesFormat.Header
    }

    /// Reads and verifies the directory file `fd` (closed by the caller); nil if it is not intact, or
    /// longer than `limit` bytes (a directory is never much larger than the records it indexes: a
    /// file that is, sparse or planted, is not read into memory). `usesFile` is asked, once the header
    /// is read, for a key uses file of this directory: its uses are then read in place of the
    /// directory's array (no more bytes than the directory alone), and checked against its own hash; if
    /// they do not verify, the directory's own are read (``usesRejected``).
    /// - Throws: An I/O error when the file cannot be read (its content then says nothing).
    package init?(fd: Int32, path: String, limit: Int, usesFile: (DirectoryFormat.Header) -> UsesFile? = { _ in nil }) throws {
        let info = try FileIO.status(fd, path)
        guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= DirectoryFormat.headerLength,
              let length = FileNumber.int(info.st_size), length <= limit else { return nil }
        let bytes = HugePages.allocate(byteCount: length)
        var (taken, rejected): (UsesFormat.Header?, Bool) = (nil, false)
        do {
            // A file that changed length meanwhile is not the one measured: its hashes decide.
            func read(_ range: Range<Int>, from fd: Int32, at offset: Int, path: String) throws -> Bool {
                try FileIO.read(fd, at: offset, into: UnsafeMutableRawBufferPointer(rebasing: bytes[range]), path: path) == range.count
            }
            guard try read(0..<DirectoryFormat.headerLength, from: fd, at: 0, path: path),
                  let layout = DirectoryFormat.layout(UnsafeRawBufferPointer(bytes), fileLength: length) else {
                bytes.deallocate()
                return nil
            }
            let usesRange = layout.bodyEnd..<length
            guard try read(DirectoryFormat.headerLength..<layout.bodyEnd, from: fd, at: DirectoryFormat.headerLength, path: path),
                  let header = DirectoryFormat.parse(UnsafeRawBufferPointer(rebasing: bytes[..<layout.bodyEnd]), fileLength: length) else {
                bytes.deallocate()
                return nil
            }
            if header.hasUsesArray, let file = usesFile(header) {
                if try read(usesRange, from: file.fd, at: UsesFormat.headerLength, path: file.path),
                   XXH64.hash(UnsafeRawBufferPointer(rebasing: bytes[usesRange])) == file.header.bodyHash {
                    taken = file.header
                } else {
                    rejected = true
                }
            }
            guard try taken != nil || read(usesRange, from: fd, at: layout.bodyEnd, path: path),
                  taken != nil || DirectoryFormat.usesVerify(UnsafeRawBufferPointer(bytes), header) else {
                bytes.deallocate()
                return nil
            }
            self.header = header
        } catch {
            bytes.deallocate()
            throw error
        }
        self.bytes = bytes
        (usesTaken, usesRejected) = (taken, rejected)
        (uses, usesStride, slotStride) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.slotStride)
        nextRecency = max(header.nextRecency, taken?.nextRecency ?? 0)
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
        (uses, usesStride, slotStride) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.slotStride)
        (nextRecency, usesTaken, usesRejected) = (header.nextRecency, nil, false)
    }

    deinit {
        bytes.deallocate()
    }

    var slotCount: Int { header.slotCount }

    @inline(__always)
    private func load<I: FixedWidthInteger>(_ slot: Int, _ field: Int) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: header.slotsStart + slot * slotStride + field, as: I.self))
    }

    @inline(__always)
    private func store<I: FixedWidthInteger>(_ value: I, _ slot: Int, _ field: Int) {
        bytes.storeBytes(of: value.littleEndian, toByteOffset: header.slotsStart + slot * slotStride + field, as: I.self)
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

    /// Every slot's uses as they are now, back to back (a key uses file's body), in this layout; nil in
    /// the layouts before, whose uses are in their slots. Valid while the index lock is held.
    var usesArray: UnsafeRawBufferPointer? {
        header.hasUsesArray ? UnsafeRawBufferPointer(start: uses, count: slotCount * DirectoryFormat.usesLength) : nil
    }
}
