import Foundation
import Testing
@testable import Stash
@testable import StashEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers read from files become an `Int` through `FileNumber` (Docs/Platforms.md, watchOS): where
/// `Int` has 32 bits (arm64_32), a crafted or foreign file, or one past 2 GiB, gives an error and never
/// a trap. The 32-bit checks run here on a 64-bit machine by passing the width.
@Suite("Numbers read from files on 32-bit and 64-bit Int")
struct FileNumberTests {
    @Test("a value fits a 32-bit Int up to Int32.max; past it, and past UInt32.max, it does not", arguments: [32, 64])
    func conversions(bitWidth: Int) {
        let is32 = bitWidth == 32
        #expect(FileNumber.int(UInt32(Int32.max), bitWidth: bitWidth) == Int(Int32.max))
        #expect(FileNumber.int(UInt32(Int32.max) + 1, bitWidth: bitWidth) == (is32 ? nil : Int(Int32.max) + 1))
        #expect(FileNumber.int(UInt32.max, bitWidth: bitWidth) == (is32 ? nil : Int(UInt32.max)))
        #expect(FileNumber.int(UInt64(UInt32.max) + 1, bitWidth: bitWidth) == (is32 ? nil : Int(UInt32.max) + 1))
        #expect(FileNumber.int(UInt64.max, bitWidth: bitWidth) == nil)
        #expect(FileNumber.int(Int64(-1), bitWidth: bitWidth) == -1)
        #expect(FileNumber.int(Int64(Int32.min) - 1, bitWidth: bitWidth) == (is32 ? nil : Int(Int32.min) - 1))
        #expect(FileNumber.sum(Int(Int32.max), 1, bitWidth: bitWidth) == (is32 ? nil : Int(Int32.max) + 1))
        #expect(FileNumber.product(1 << 16, 1 << 15, bitWidth: bitWidth) == (is32 ? nil : 1 << 31))
        #expect(FileNumber.product(Int.max, 2, bitWidth: bitWidth) == nil)
        #expect(FileNumber.sum(Int.max, 1, bitWidth: bitWidth) == nil)
    }

    @Test("a file size past 2 GiB is an I/O error (EFBIG) where Int has 32 bits, and a size on 64 bits")
    func fileSizes() throws {
        var info = stat()
        info.st_size = off_t(Int32.max) + 1
        #expect(try FileNumber.size(info, path: "/x", bitWidth: 64) == Int(Int32.max) + 1)
        #expect {
            _ = try FileNumber.size(info, path: "/x", bitWidth: 32)
        } throws: { error in
            FileIO.isErrno(error, .EFBIG)
        }
        info.st_size = -1
        #expect(throws: StorageError.self) { try FileNumber.size(info, path: "/x") }
        #expect(FileNumber.saturating(UInt64.max) == Int.max)
        #expect(FileNumber.saturating(UInt32.max) == Int(exactly: UInt32.max) ?? Int.max)
    }

    // MARK: The key directory's header, crafted

    /// A directory of one entry, then `patch` applied to its header and the header's hash made right
    /// again: a crafted file, not a damaged one.
    private func craftedDirectory(offset: Int = 80, _ patch: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        let record = DiskRecord(segment: 4, offset: 0, length: 40, value: .inline(size: 8), expiry: .infinity, lastAccess: 0,
                                keyHash: KeyHash.of("k", seed: 9))
        let buffer = DirectoryFormat.encode(position: DirectoryPosition(segment: 4, salt: 44, offset: offset), store: 9,
                                            segmentSalts: [4: 44]) { visit in
            var key = "k"
            key.withUTF8 { visit(UnsafeRawBufferPointer($0), record) }
        }
        defer { buffer.deallocate() }
        var bytes = Array(buffer)
        patch(&bytes)
        let hash = bytes.withUnsafeBytes { XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[0..<120])) }
        withUnsafeBytes(of: hash.littleEndian) { bytes.replaceSubrange(120..<128, with: $0) }
        return bytes
    }

    private func put(_ value: UInt64, at offset: Int, in bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.replaceSubrange(offset..<(offset + 8), with: $0) }
    }

    private func parses(_ bytes: [UInt8], bitWidth: Int) -> Bool {
        bytes.withUnsafeBytes { DirectoryFormat.parse($0, bitWidth: bitWidth) } != nil
    }

    @Test("a directory position past Int32.max is refused where Int has 32 bits, kept on 64 bits")
    func positionPastInt32() {
        let bytes = craftedDirectory(offset: Int(UInt32.max))
        #expect(parses(craftedDirectory(), bitWidth: 32), "the uncrafted directory parses on both")
        #expect(parses(bytes, bitWidth: 64))
        #expect(!parses(bytes, bitWidth: 32))
    }

    @Test("a total size past Int32.max and past UInt32.max is refused where Int has 32 bits")
    func totalSizePastInt32() {
        for total in [UInt64(Int32.max) + 1, UInt64(UInt32.max) + 1] {
            let bytes = craftedDirectory { self.put(total, at: 64, in: &$0) }
            #expect(parses(bytes, bitWidth: 64), "total \(total)")
            #expect(!parses(bytes, bitWidth: 32), "total \(total)")
        }
    }

    @Test("slot counts, arena lengths and segment counts past Int32.max and UInt32.max: refused, never a trap", arguments: [32, 64])
    func craftedSizes(bitWidth: Int) {
        let crafted: [(field: Int, value: UInt64)] = [
            (48, UInt64(Int32.max) + 1), (48, UInt64(UInt32.max)), (48, UInt64(UInt32.max) + 1), (48, .max), // slot count
            (56, UInt64(Int32.max) + 1), (56, UInt64(UInt32.max) + 1), (56, .max), // arena length
            (40, UInt64(UInt32.max) + 1), (32, UInt64(UInt32.max) + 1), (64, .max), // entry count, position, total
        ]
        for (field, value) in crafted {
            #expect(!parses(craftedDirectory { self.put(value, at: field, in: &$0) }, bitWidth: bitWidth), "field \(field) = \(value)")
        }
        // The segment count is a u32 at 20 (beside the position's segment at 16).
        let segments = craftedDirectory { bytes in
            withUnsafeBytes(of: UInt32.max.littleEndian) { bytes.replaceSubrange(20..<24, with: $0) }
        }
        #expect(!parses(segments, bitWidth: bitWidth))
    }
}
