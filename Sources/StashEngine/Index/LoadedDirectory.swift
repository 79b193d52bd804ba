import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A key directory file (``DirectoryFormat``), read into memory of its own: in this layout a page at a
/// time, as lookups first need it (``DirectoryPages``), in the layouts before whole when the store opens.
///
/// Read, not mapped: what a store believes of a file it checked must stay what it checked. A file
/// mapped (even privately) shows later writes of other programs in every page this process has not
/// written itself, so a directory rewritten in place (zeros, an older copy put back by
/// `rsync --inplace` or `dd conv=notrunc`) would answer lookups from unverified bytes and be copied
/// into the next directory. Held in memory, the bytes verified (a page's hash, or the whole body's)
/// are the bytes every later lookup reads, whatever happens to the file; a page read later that does
/// not verify makes the directory ``failed``, and a lookup that needed it answers nothing (the store
/// then drops the directory and replays its segments). A read marks its entry used by writing the
/// entry's recency and last access into its uses (the array at the end, read from a key uses file,
/// ``UsesFormat``, where one was taken), and a change to an entry's record goes to the
/// ``KeyDirectory``'s overlay. A file that cannot be read at open (an I/O error, a device locked under
/// data protection) is an error, never a fault.
package final class LoadedDirectory: @unchecked Sendable {
    // @unchecked Sendable: only touched under the store's index lock.
    package let header: DirectoryFormat.Header
    private let bytes: UnsafeMutableRawBufferPointer
    /// The pages not read yet (nil once every page is, or for a directory read whole).
    private var pages: DirectoryPages? {
        didSet { pagesReference = pages.map(Unmanaged.passUnretained) }
    }
    /// `pages`, reached without the retain and release a strong reference costs: ``readPages(_:_:)``
    /// runs a few times a lookup, and those two atomic operations were a twentieth of a read off the
    /// queue while the directory was partial (`perf`).
    private var pagesReference: Unmanaged<DirectoryPages>?
    /// Whether every page is read and checked (`pages` nil): what every lookup tests first, one load
    /// without the retain and release that binding `pages` costs.
    private var isWhole: Bool { pagesReference == nil }
    /// Whether `bytes` are ``PageMemory`` (else the allocator's).
    private let isMapped: Bool
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
    /// Whether a key uses file was offered but its page table did not verify (the directory's own uses are read).
    let usesRejected: Bool
    /// Whether a page failed its check or its read: lookups that need it answer nothing, and the store
    /// drops this directory. (A failed page is never read, so `pages` is kept once one failed.)
    var failed: Bool { !isWhole && pages?.failed == true }

    /// A key uses file offered to an open: its descriptor (closed by the caller) and what its header said.
    package struct UsesFile {
        let fd: Int32
        let path: String
        let header: UsesFormat.Header
    }

    /// Reads the directory file `fd` (closed by the caller; this layout keeps a descriptor of its own
    /// to read pages later); nil if it is not intact, or longer than `limit` bytes (a directory is never
    /// much larger than the records it indexes: a file that is, sparse or planted, is not read into
    /// memory). In this layout the header, the page table and the segment list are read and checked,
    /// and the other pages when first needed (`lazily`) or now (nil then if one does not verify). The
    /// layouts before are read and checked whole. `usesFile` is asked, once the header is read, for a
    /// key uses file of this directory: its pages then stand in for the directory's uses, if its page
    /// table verifies (else ``usesRejected``).
    /// - Throws: An I/O error when the file cannot be read (its content then says nothing).
    package init?(fd: Int32, path: String, limit: Int, lazily: Bool = false,
                  usesFile: (DirectoryFormat.Header) -> UsesFile? = { _ in nil }) throws {
        // A memory volume's descriptor cannot be duplicated for later reads: its directory is read whole.
        let lazily = lazily && !MemoryVolume.isVirtual(fd)
        let info = try FileIO.status(fd, path)
        guard info.st_mode & S_IFMT == S_IFREG, info.st_size >= DirectoryFormat.headerLength,
              let length = FileNumber.int(info.st_size), length <= limit else { return nil }
        let head = try FileIO.read(fd, at: 0, count: DirectoryFormat.headerLength, path: path)
        guard head.count == DirectoryFormat.headerLength,
              let layout = head.withUnsafeBytes({ DirectoryFormat.layout($0, fileLength: length) }) else { return nil }
        // A file that changed length meanwhile is not the one measured: its hashes decide.
        let tableHash = head.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 80, as: UInt64.self)) }
        let table = layout.pageTable
            ? try DirectoryFormat.readPageTable(fd, at: layout.usesEnd, count: (layout.end - layout.usesEnd) / 8, expected: tableHash, path: path)
            : []
        guard let table else { return nil }
        // Memory touched only where pages are read (``PageMemory``), and no huge pages, which a first
        // lookup would fault in whole; read whole, huge pages (``HugePages``).
        let paged = lazily && layout.pageTable ? PageMemory.allocate(byteCount: layout.usesEnd) : nil
        let bytes = paged ?? HugePages.allocate(byteCount: layout.usesEnd)
        let release = { paged != nil ? PageMemory.release(bytes) : bytes.deallocate() }
        var (taken, rejected): (UsesFormat.Header?, Bool) = (nil, false)
        var pages: DirectoryPages?
        do {
            head.withUnsafeBytes { bytes.copyMemory(from: $0) }
            if layout.pageTable {
                pages = try DirectoryPages(fd: fd, path: path, table: table, usesStart: layout.bodyEnd, usesEnd: layout.usesEnd, borrowing: !lazily)
            } else {
                let rest = UnsafeMutableRawBufferPointer(rebasing: bytes[DirectoryFormat.headerLength...])
                guard try FileIO.read(fd, at: DirectoryFormat.headerLength, into: rest, path: path) == rest.count,
                      DirectoryFormat.verify(UnsafeRawBufferPointer(bytes), layout) else { throw Refused() }
            }
            guard pages?.ensure(DirectoryFormat.headerLength..<layout.slotsStart, in: bytes) ?? !layout.pageTable,
                  let header = DirectoryFormat.header(UnsafeRawBufferPointer(bytes), layout) else { throw Refused() }
            // Asked in every layout, so that a uses file this directory cannot take is seen (and a writer removes it).
            if let file = usesFile(header), let pages {
                let usesTable = try DirectoryFormat.readPageTable(file.fd, at: file.header.tableStart, count: DirectoryFormat.pageCount(header.usesEnd - header.usesStart),
                                                                  expected: file.header.tableHash, path: file.path)
                if let usesTable, try pages.takeUses(fd: file.fd, path: file.path, table: usesTable) {
                    taken = file.header
                } else {
                    rejected = true
                }
            }
            if !lazily, let whole = pages {
                guard whole.loadAll(into: bytes) else { throw Refused() }
                pages = nil
            }
            self.header = header
        } catch {
            release()
            if error is Refused { return nil }
            throw error
        }
        self.bytes = bytes
        isMapped = paged != nil
        self.pages = pages
        pagesReference = pages.map(Unmanaged.passUnretained)
        (usesTaken, usesRejected) = (taken, rejected)
        (uses, usesStride, slotStride) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.slotStride)
        nextRecency = max(header.nextRecency, taken?.nextRecency ?? 0)
    }

    /// A directory that is not intact, found while it was read.
    private struct Refused: Error {}

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
        isMapped = false
        (uses, usesStride, slotStride) = (bytes.baseAddress! + header.usesStart, header.usesStride, header.slotStride)
        (nextRecency, usesTaken, usesRejected) = (header.nextRecency, nil, false)
    }

    /// Its memory is given back on a thread of its own (``BackgroundRelease``): a store closing, or taking a new directory, does not wait.
    deinit {
        if isMapped { PageMemory.release(bytes) } else { BackgroundRelease.deallocate(bytes) }
    }

    /// Whether pages are still to be read (this layout, read lazily): a lookup may still find one that fails.
    package var isPartial: Bool { !isWhole }
    /// How many pages have been read, while some are still to be read (nil once every one is).
    package var pagesRead: Int? { pages?.readCount }

    /// Reads and checks every page not read yet (the uses' alone: `usesOnly`), or `limit` of them; false
    /// if one fails (then ``failed``).
    func loadAll(usesOnly: Bool = false, limit: Int = .max) -> Bool {
        guard let pages else { return true }
        guard pages.loadAll(usesOnly: usesOnly, limit: limit, into: bytes) else { return false }
        if pages.isComplete { self.pages = nil }
        return true
    }

    /// Whether bytes `start..<start + count` are read and checked (read now if need be); false if a page failed.
    @inline(__always)
    private func ready(_ start: Int, _ count: Int) -> Bool {
        isWhole || readPages(start, count)
    }

    /// ``ready(_:_:)`` where pages are still to be read.
    @inline(never)
    private func readPages(_ start: Int, _ count: Int) -> Bool {
        guard let pagesReference else { return true }
        return pagesReference._withUnsafeGuaranteedRef { $0.ensure(start..<start + count, in: bytes) }
    }

    var slotCount: Int { header.slotCount }

    /// A field of `slot`; 0 where its page failed.
    @inline(__always)
    private func load<I: FixedWidthInteger>(_ slot: Int, _ field: Int) -> I {
        let start = header.slotsStart + slot * slotStride
        guard ready(start, slotStride) else { return 0 }
        return I(littleEndian: bytes.loadUnaligned(fromByteOffset: start + field, as: I.self))
    }

    @inline(__always)
    private func store<I: FixedWidthInteger>(_ value: I, _ slot: Int, _ field: Int) {
        let start = header.slotsStart + slot * slotStride
        guard ready(start, slotStride) else { return }
        bytes.storeBytes(of: value.littleEndian, toByteOffset: start + field, as: I.self)
    }

    /// Whether the uses of `slot` are read and checked (read now if need be).
    @inline(__always)
    private func usesReady(_ slot: Int) -> Bool {
        isWhole || readPages(header.usesStart + slot * usesStride, DirectoryFormat.usesLength)
    }

    /// The key hash in `slot`; 0 (an empty slot) where its page failed.
    package func hash(at slot: Int) -> UInt64 { load(slot, 0) }
    func isOccupied(_ slot: Int) -> Bool { hash(at: slot) != 0 }
    func recency(at slot: Int) -> UInt64 {
        usesReady(slot) ? UInt64(littleEndian: uses.loadUnaligned(fromByteOffset: slot * usesStride + 8, as: UInt64.self)) : 0
    }

    /// The key's UTF-8 in the arena; nil if the slot points outside it (a crafted file: never trusted),
    /// or a page it is in failed.
    package func keyBytes(at slot: Int) -> UnsafeRawBufferPointer? {
        guard let range = keyRange(at: slot), ready(range.lowerBound, range.count) else { return nil }
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[range])
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

    /// The first slot from `hash`'s home that holds `hash` and that `accepts`, its key not compared: for a
    /// caller that checks the key where it reads the record (``KeyDirectory/markUsedByHash(_:time:)``).
    package func find(hash: UInt64, accepting accepts: (Int) -> Bool) -> Int? {
        probe(hash, matches: accepts)
    }

    /// The slot whose record is at `offset` of `segment`, found by its key's hash (an access record's target).
    package func find(hash: UInt64, segment: UInt32, offset: UInt32) -> Int? {
        probe(hash) { load($0, 16) as UInt32 == segment && load($0, 20) as UInt32 == offset }
    }

    /// The record in `slot`; nil if the slot is not well formed (a crafted file), or a page it needs failed.
    package func record(at slot: Int) -> DiskRecord? {
        // The slot's page(s) and its uses' checked once, then its fields read as they are.
        let start = header.slotsStart + slot * slotStride
        guard ready(start, slotStride), usesReady(slot) else { return nil }
        func field<I: FixedWidthInteger>(_ offset: Int) -> I { I(littleEndian: bytes.loadUnaligned(fromByteOffset: start + offset, as: I.self)) }
        let size: UInt64 = field(32)
        let flags: UInt32 = field(28)
        guard size <= UInt64(Int.max), flags & ~1 == 0, let key = keyRange(at: slot) else { return nil }
        let value: StoredValue
        if flags & 1 != 0 {
            let end = key.upperBound
            guard end + 16 <= header.arenaStart + header.arenaLength, ready(end, 16) else { return nil }
            value = .file(id: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: end, as: UInt64.self)), size: Int(size),
                          hash: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: end + 8, as: UInt64.self)))
        } else {
            value = .inline(size: Int(size))
        }
        let expiry = Double(bitPattern: field(40))
        let access = Double(bitPattern: UInt64(littleEndian: uses.loadUnaligned(fromByteOffset: slot * usesStride, as: UInt64.self)))
        return DiskRecord(segment: field(16), offset: field(20), length: field(24), value: value,
                          expiry: expiry.isNaN ? 0 : expiry, lastAccess: access.isNaN ? 0 : access, keyHash: field(0))
    }

    /// Points `slot` at another copy of its record (compaction moved it).
    package func move(_ slot: Int, segment: UInt32, offset: UInt32, length: UInt32) {
        store(segment, slot, 16)
        store(offset, slot, 20)
        store(length, slot, 24)
    }

    /// Marks `slot` used: its recency and last access.
    package func touch(_ slot: Int, recency: UInt64, time: Double) {
        guard usesReady(slot) else { return }
        uses.storeBytes(of: time.bitPattern.littleEndian, toByteOffset: slot * usesStride, as: UInt64.self)
        uses.storeBytes(of: recency.littleEndian, toByteOffset: slot * usesStride + 8, as: UInt64.self)
    }

    // MARK: Uses apart

    /// Every slot's uses as they are now, back to back (a key uses file's body), read whole first, in
    /// this layout; nil in the layouts before (a close writes them anew in this one instead), or if a
    /// page of the uses failed. Valid while the index lock is held.
    var usesArray: UnsafeRawBufferPointer? {
        guard header.hasPageTable, loadAll(usesOnly: true) else { return nil }
        return UnsafeRawBufferPointer(start: uses, count: slotCount * DirectoryFormat.usesLength)
    }
}
