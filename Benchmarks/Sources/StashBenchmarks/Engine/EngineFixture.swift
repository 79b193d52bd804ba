import CPeerDriver
import Foundation

/// The keys and values of the engine rows, prepared before any clock starts: as flat C buffers for
/// the peers (19-byte keys, 200-byte values, back to back) and as `String`s and `Data` for Stash,
/// whose API takes those. Key `i` is ``Fixtures/key(_:)``; its value in revision `r` is
/// ``Fixtures/small(_:revision:)`` of `i % valueCount` (a ring, so a million entries need no
/// 200 MB of values; the values of one LevelDB block are still all different, so its compression
/// finds nothing to share).
final class EngineFixture {
    static let keySize = 19
    static let valueSize = 200
    static let revisions = 2

    let count: Int
    let valueCount: Int
    let keyStrings: [String]
    /// `valueData[revision][i % valueCount]`.
    let valueData: [[Data]]
    private let keyBytes: UnsafeMutableRawBufferPointer
    private let valueBytes: [UnsafeMutableRawBufferPointer]

    init(count: Int, valueCount: Int = 65_536) {
        precondition(count <= 1_000_000, "keys past 999,999 are longer than 19 bytes")
        self.count = count
        self.valueCount = max(1, min(count, valueCount))
        keyStrings = (0..<count).map(Fixtures.key)
        let ring = self.valueCount
        valueData = (0..<Self.revisions).map { revision in (0..<ring).map { Fixtures.small($0, revision: revision) } }
        let keyBytes = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1, count * Self.keySize), alignment: 16)
        self.keyBytes = keyBytes
        for (index, key) in keyStrings.enumerated() {
            var key = key
            key.withUTF8 { utf8 in
                precondition(utf8.count == Self.keySize)
                UnsafeMutableRawBufferPointer(rebasing: keyBytes[(index * Self.keySize)...]).copyMemory(from: UnsafeRawBufferPointer(utf8))
            }
        }
        valueBytes = valueData.map { values in
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ring * Self.valueSize, alignment: 16)
            for (index, value) in values.enumerated() {
                value.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[(index * Self.valueSize)...]).copyMemory(from: $0) }
            }
            return buffer
        }
    }

    deinit {
        keyBytes.deallocate()
        for buffer in valueBytes { buffer.deallocate() }
    }

    /// Key `index`: `keySize` bytes.
    @inline(__always)
    func key(_ index: Int) -> UnsafeRawPointer { UnsafeRawPointer(keyBytes.baseAddress!) + index * Self.keySize }

    /// The value of key `index` in `revision`: `valueSize` bytes.
    @inline(__always)
    func value(_ index: Int, revision: Int) -> UnsafeRawPointer {
        UnsafeRawPointer(valueBytes[revision].baseAddress!) + (index % valueCount) * Self.valueSize
    }

    /// The buffers as the C driver takes them, for `revision`'s values.
    func cData(revision: Int) -> cpeer_data {
        cpeer_data(keys: keyBytes.baseAddress!.assumingMemoryBound(to: CChar.self), key_size: Self.keySize,
                   values: valueBytes[revision].baseAddress!.assumingMemoryBound(to: CChar.self),
                   value_size: Self.valueSize, value_count: valueCount)
    }

    /// `0..<count` in the seeded order of ``Fixtures/shuffled(_:seed:)``, as the C driver's indices.
    func order(seed: UInt64) -> [Int32] { Fixtures.shuffled(count, seed: seed).map { Int32($0) } }

    /// `0..<count` in key order (fills).
    var sequential: [Int32] { (0..<count).map { Int32($0) } }
}
