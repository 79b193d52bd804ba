import Foundation
#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The pages of a key directory (`STASHKD5`) that a store has not read yet: each is read into the
/// directory's memory and checked against its hash in the page table the first time a lookup needs it
/// (Docs/Format.md, "Key directory"), so an open reads the header, the table and the segment list, and a
/// first lookup a few pages, not the whole file.
///
/// Read, never mapped, for the reason ``LoadedDirectory`` gives: a page once checked is this process's
/// own, whatever happens to the file. A page that fails its check (the file changed in place since the
/// open, or cut short) or cannot be read fails every later read of this directory (``failed``); the
/// store then drops it and replays its segments (``DiskStore/checkIndexWhole()``). Only touched under
/// the store's index lock, like the directory.
final class DirectoryPages {
    private let file: Source
    /// The key uses file whose pages stand in for the directory's uses, once one is taken.
    private var usesFile: Source?
    /// Every page's hash: the body's pages, then the uses' (the uses file's once it is taken).
    private var hashes: [UInt64]
    private let bodyPages: Int
    private let usesStart: Int
    private let usesEnd: Int
    // `@exclusivity(unchecked)` on what every lookup of a partial directory reads (touched only under
    // the store's index lock): the run-time exclusivity checks were ~4% of a read off the queue (`perf`).
    /// One bit per page: read and checked.
    @exclusivity(unchecked) private var loaded: [UInt64]
    private var missing: Int
    /// Whether a page failed its check or its read: every later read of a page fails too.
    @exclusivity(unchecked) private(set) var failed = false

    /// A file the pages are read from: a descriptor (of its own, closed with this, unless ``borrows``),
    /// and its path for errors.
    private struct Source {
        let fd: Int32
        let path: String
    }
    /// Whether the descriptors are the caller's, who keeps them open as long as this lives (a directory
    /// read whole as it opens), rather than duplicates of its own (one read as lookups need it).
    private let borrows: Bool

    /// The pages of the directory open as `fd` (duplicated, unless `borrowing`: the caller closes its
    /// own), whose page table `table` verified, with its uses at `usesStart..<usesEnd`.
    /// - Throws: An I/O error if no descriptor is left (`EMFILE`): the file says nothing wrong then.
    init(fd: Int32, path: String, table: [UInt64], usesStart: Int, usesEnd: Int, borrowing: Bool = false) throws {
        borrows = borrowing
        file = Source(fd: borrowing ? fd : try Self.duplicate(fd, path), path: path)
        hashes = table
        bodyPages = DirectoryFormat.pageCount(usesStart - DirectoryFormat.headerLength)
        (self.usesStart, self.usesEnd) = (usesStart, usesEnd)
        missing = table.count
        loaded = Array(repeating: 0, count: (table.count + 63) >> 6)
    }

    deinit {
        guard !borrows else { return }
        FileIO.closeDescriptor(file.fd)
        if let usesFile { FileIO.closeDescriptor(usesFile.fd) }
    }

    /// Reads the uses from the key uses file `fd` (duplicated) from now on, whose page table `table`
    /// verified; false if the table is not one of these uses.
    /// - Throws: An I/O error if no descriptor is left.
    func takeUses(fd: Int32, path: String, table: [UInt64]) throws -> Bool {
        guard table.count == hashes.count - bodyPages else { return false }
        usesFile = Source(fd: borrows ? fd : try Self.duplicate(fd, path), path: path)
        hashes.replaceSubrange(bodyPages..., with: table)
        return true
    }

    /// A descriptor of this object's own for `fd`, closed with it.
    private static func duplicate(_ fd: Int32, _ path: String) throws -> Int32 {
        let own = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard own >= 0 else { throw FileIO.error("fcntl(F_DUPFD_CLOEXEC)", path) }
        return own
    }

    /// Whether every page has been read and checked.
    var isComplete: Bool { missing == 0 }
    /// How many pages have been read and checked.
    var readCount: Int { hashes.count - missing }

    /// The page that holds byte `offset` of the directory (past the header, before the page table).
    private func page(at offset: Int) -> Int {
        offset < usesStart ? (offset - DirectoryFormat.headerLength) / DirectoryFormat.pageLength
            : bodyPages + (offset - usesStart) / DirectoryFormat.pageLength
    }

    private func isLoaded(_ page: Int) -> Bool { loaded[page >> 6] & (1 << UInt64(page & 63)) != 0 }

    /// Where `page` lies in the directory.
    private func range(of page: Int) -> Range<Int> {
        let (start, end, number) = page < bodyPages ? (DirectoryFormat.headerLength, usesStart, page) : (usesStart, usesEnd, page - bodyPages)
        let lower = start + number * DirectoryFormat.pageLength
        return lower..<min(lower + DirectoryFormat.pageLength, end)
    }

    /// Makes sure bytes `range` of `image` (the directory's memory) are read and checked; false if a page
    /// failed, now or before.
    @inline(__always)
    func ensure(_ range: Range<Int>, in image: UnsafeMutableRawBufferPointer) -> Bool {
        guard !failed else { return false }
        guard !range.isEmpty, range.lowerBound >= DirectoryFormat.headerLength, range.upperBound <= usesEnd else { return range.isEmpty }
        let last = page(at: range.upperBound - 1)
        var page = page(at: range.lowerBound)
        while page <= last {
            if !isLoaded(page), !load(page..<page + 1, into: image) { return false }
            page += 1
        }
        return true
    }

    /// Reads and checks every page not read yet (the uses' alone: `usesOnly`), a run of them at a time;
    /// or stops once it read `limit` pages. False if a page failed.
    func loadAll(usesOnly: Bool = false, limit: Int = .max, into image: UnsafeMutableRawBufferPointer) -> Bool {
        var page = usesOnly ? bodyPages : 0
        var budget = limit
        while page < hashes.count, !failed, budget > 0 {
            guard !isLoaded(page) else {
                page += 1
                continue
            }
            // Up to 256 pages (1 MiB) in one read, none past the body's end or already read.
            var end = page + 1
            while end < hashes.count, end - page < min(256, budget), end != bodyPages, !isLoaded(end) { end += 1 }
            guard load(page..<end, into: image) else { return false }
            budget -= end - page
            page = end
        }
        return !failed
    }

    /// Reads `pages` (in a row, none read yet, all of the body or all of the uses) into `image` and checks each.
    private func load(_ pages: Range<Int>, into image: UnsafeMutableRawBufferPointer) -> Bool {
        let target = range(of: pages.lowerBound).lowerBound..<range(of: pages.upperBound - 1).upperBound
        let source = pages.lowerBound >= bodyPages ? usesFile ?? file : file
        // In a key uses file the uses start after its header, not where the directory's do.
        let offset = source.fd == file.fd ? target.lowerBound : UsesFormat.headerLength + target.lowerBound - usesStart
        let buffer = UnsafeMutableRawBufferPointer(rebasing: image[target])
        guard (try? FileIO.read(source.fd, at: offset, into: buffer, path: source.path)) == target.count else {
            failed = true
            return false
        }
        for page in pages {
            guard DirectoryFormat.pageHash(UnsafeRawBufferPointer(rebasing: image[range(of: page)])) == hashes[page] else {
                failed = true
                return false
            }
            loaded[page >> 6] |= 1 << UInt64(page & 63)
            missing -= 1
        }
        return true
    }
}
