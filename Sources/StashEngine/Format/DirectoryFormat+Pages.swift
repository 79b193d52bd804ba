import Foundation

/// The page table that ends a key directory (and a key uses file): one XXH64 per 4 KiB page of the
/// body, then per page of the uses (Docs/Format.md, "Key directory"), so that a store checks each page
/// when it first reads it (``DirectoryPages``) instead of hashing the whole file at open.
extension DirectoryFormat {
    static let pageLength = 4096

    /// The pages `length` bytes are cut into: the last one may be shorter. Never overflows, whatever
    /// length a crafted header gives.
    static func pageCount(_ length: Int) -> Int { length / pageLength + (length % pageLength == 0 ? 0 : 1) }

    /// The length of the page table of a directory whose uses lie at `usesStart..<usesEnd`.
    static func tableLength(usesStart: Int, usesEnd: Int) -> Int {
        8 * (pageCount(usesStart - headerLength) + pageCount(usesEnd - usesStart))
    }

    /// A page's hash in the page table: XXH64 (seed 0) of its bytes.
    static func pageHash(_ page: UnsafeRawBufferPointer) -> UInt64 { XXH64.hash(page) }

    /// Page `number` of `region`.
    private static func page(_ number: Int, of region: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let start = number * pageLength
        return UnsafeRawBufferPointer(rebasing: region[start..<min(start + pageLength, region.count)])
    }

    /// Writes the hash of each page of `region` into `table`, as its entries `first`, `first + 1`, ….
    /// A large region is hashed on every core, each a run of pages of its own: hashing the 23 MB of
    /// uses a close writes after reads took 4 ms of it on one.
    static func hashPages(_ region: UnsafeRawBufferPointer, into table: UnsafeMutableRawBufferPointer, from first: Int) {
        let pages = pageCount(region.count)
        let runs = region.count < parallelHashMinimum ? 1 : hashRuns
        let perRun = (pages + runs - 1) / runs
        let parts = PageRuns(region: region, table: table)
        DispatchQueue.concurrentPerform(iterations: runs) { run in
            for number in min(pages, run * perRun)..<min(pages, (run + 1) * perRun) {
                let hash = pageHash(page(number, of: parts.region))
                parts.table.storeBytes(of: hash.littleEndian, toByteOffset: (first + number) * 8, as: UInt64.self)
            }
        }
    }

    /// Below this, a region's pages are hashed on the calling thread alone.
    static let parallelHashMinimum = 4 << 20

    /// How many runs a large region is hashed in: the cores, up to 8. Read once (on Linux, Foundation
    /// reads the cgroup's files for it at every call).
    private static let hashRuns = min(ProcessInfo.processInfo.activeProcessorCount, 8)

    /// What the runs of ``hashPages(_:into:from:)`` share: each reads its own pages and writes its own
    /// entries of the table.
    private struct PageRuns: @unchecked Sendable {
        let region: UnsafeRawBufferPointer
        let table: UnsafeMutableRawBufferPointer
    }

    /// Whether every page of `region` has the hash `table` lists for it from entry `first` on.
    static func pagesVerify(_ region: UnsafeRawBufferPointer, table: UnsafeRawBufferPointer, from first: Int) -> Bool {
        guard (first + pageCount(region.count)) * 8 <= table.count else { return false }
        return (0..<pageCount(region.count)).allSatisfy {
            pageHash(page($0, of: region)) == UInt64(littleEndian: table.loadUnaligned(fromByteOffset: (first + $0) * 8, as: UInt64.self))
        }
    }

    /// The page table of `count` entries at `offset` of the file `fd`, if its hash is `expected`; nil otherwise.
    /// - Throws: An I/O error when the file cannot be read.
    static func readPageTable(_ fd: Int32, at offset: Int, count: Int, expected: UInt64, path: String) throws -> [UInt64]? {
        var table = [UInt64](repeating: 0, count: count)
        let read = try table.withUnsafeMutableBytes { try FileIO.read(fd, at: offset, into: $0, path: path) }
        guard read == count * 8, table.withUnsafeBytes({ XXH64.hash($0) }) == expected else { return nil }
        return table.map { UInt64(littleEndian: $0) }
    }
}
