import Foundation

/// The keys a writer has written, as written (quoted, escaped) with their hash, found again by the
/// bits of the key's `String` when it is a small string: a small string's bits are its UTF-8 bytes,
/// so equal bits are an equal key (a key of more than 15 bytes, or any key on a platform whose
/// `String` is not two words, takes the long way). Synthesized `CodingKeys` give the same small
/// strings every time: a value's keys are escaped and hashed once per thread, not once per value.
struct JSONKeyCache {
    struct Entry {
        var bits: (UInt64, UInt64) = (0, 0) // never a small string's bits
        var escapesSlashes = false
        var hash: UInt64 = 0
        var start: Int32 = 0
        var length: Int32 = 0
    }

    static let slots = 64
    static let arenaCapacity = 4096
    private let entries = UnsafeMutablePointer<Entry>.allocate(capacity: slots)
    private let arena = UnsafeMutablePointer<UInt8>.allocate(capacity: arenaCapacity)
    private var arenaCount = 0

    init() { entries.initialize(repeating: Entry(), count: Self.slots) }

    func deallocate() {
        entries.deallocate()
        arena.deallocate()
    }

    /// The bits of `key` when it is a small string (bit 61 of its second word, in Swift's 64-bit
    /// `String` layout).
    @inline(__always) static func smallBits(_ key: String) -> (UInt64, UInt64)? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        let bits = unsafeBitCast(key, to: (UInt64, UInt64).self)
        return (bits.1 >> 61) & 1 == 1 ? bits : nil
    }

    @inline(__always) private static func slot(_ bits: (UInt64, UInt64)) -> Int {
        let mixed = (bits.0 ^ bits.1 &* 0x9E37_79B9_7F4A_7C15) &* 0xFF51_AFD7_ED55_8CCD
        return Int(truncatingIfNeeded: mixed >> 58) // 64 slots
    }

    /// The written form and hash of the key with these bits, if kept.
    @inline(__always) func find(_ bits: (UInt64, UInt64), escapesSlashes: Bool) -> (bytes: UnsafeBufferPointer<UInt8>, hash: UInt64)? {
        let entry = entries[Self.slot(bits)]
        guard entry.bits == bits, entry.escapesSlashes == escapesSlashes else { return nil }
        return (UnsafeBufferPointer(start: arena + Int(entry.start), count: Int(entry.length)), entry.hash)
    }

    /// Keeps `written` (the key as written) and its hash for the key with these bits.
    mutating func keep(_ bits: (UInt64, UInt64), escapesSlashes: Bool, written: UnsafeBufferPointer<UInt8>, hash: UInt64) {
        guard let source = written.baseAddress, written.count <= 128 else { return }
        if arenaCount + written.count > Self.arenaCapacity {
            // Full: start again (a thread that writes many different keys keeps the latest ones).
            entries.update(repeating: Entry(), count: Self.slots)
            arenaCount = 0
        }
        (arena + arenaCount).update(from: source, count: written.count)
        entries[Self.slot(bits)] = Entry(bits: bits, escapesSlashes: escapesSlashes, hash: hash,
                                         start: Int32(arenaCount), length: Int32(written.count))
        arenaCount += written.count
    }
}
