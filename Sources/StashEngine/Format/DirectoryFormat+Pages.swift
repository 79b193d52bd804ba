/// The page table that ends a key directory (and a key uses file): one XXH64 per 4 KiB page of the
/// body, then per page of the uses (Docs/Format.md, "Key directory"), so that a store checks each page
/// when it first reads it (``DirectoryPages``) instead of hashing the whole file at open.
extension DirectoryFormat {
    static let pageLength = 4096

    /// The pages `length` bytes are cut into: the last one may be shorter.
    static func pageCount(_ length: Int) -> Int { (length + pageLength - 1) / pageLength }

    /// The length of the page table of a directory whose uses lie at `usesStart..<usesEnd`.
    static func tableLength(usesStart: Int, usesEnd: Int) -> Int {
        8 * (pageCount(usesStart - headerLength) + pageCount(usesEnd - usesStart))
    }

    /// Writes the hash of each page of `region` into `table`, as its entries `first`, `first + 1`, ….
    static func hashPages(_ region: UnsafeRawBufferPointer, into table: UnsafeMutableRawBufferPointer, from first: Int) {
        for page in 0..<pageCount(region.count) {
            let start = page * pageLength
            let hash = XXH64.hash(UnsafeRawBufferPointer(rebasing: region[start..<min(start + pageLength, region.count)]))
            table.storeBytes(of: hash.littleEndian, toByteOffset: (first + page) * 8, as: UInt64.self)
        }
    }

    /// Whether every page of `region` has the hash `table` lists for it from entry `first` on.
    static func pagesVerify(_ region: UnsafeRawBufferPointer, table: UnsafeRawBufferPointer, from first: Int) -> Bool {
        guard (first + pageCount(region.count)) * 8 <= table.count else { return false }
        for page in 0..<pageCount(region.count) {
            let start = page * pageLength
            let hash = XXH64.hash(UnsafeRawBufferPointer(rebasing: region[start..<min(start + pageLength, region.count)]))
            guard hash == UInt64(littleEndian: table.loadUnaligned(fromByteOffset: (first + page) * 8, as: UInt64.self)) else { return false }
        }
        return true
    }
}
