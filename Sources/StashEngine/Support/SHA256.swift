/// SHA-256 (FIPS 180-4), used only to name value files after their keys.
///
/// Value files need a name that is stable across launches and processes (Swift's `Hasher` is
/// seeded per process) and that no key, however hostile, can make collide with another's.
/// Foundation has no hash on Linux and Stash takes no dependencies, hence this small version.
package enum SHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// The 32-byte digest of `bytes`.
    package static func digest<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> [UInt8] {
        var state = initialState
        let message = Array(bytes)
        message.withUnsafeBytes { absorb($0, into: &state) }
        return withUnsafeBytes(of: &state) { words in
            (0..<32).map { words.load(fromByteOffset: $0 & ~3, as: UInt32.self) >> UInt32(24 - ($0 & 3) * 8) }
                .map { UInt8(truncatingIfNeeded: $0) }
        }
    }

    /// Lower-case hex of the first `byteCount` (at most 32) bytes of the digest of `string`'s UTF-8.
    ///
    /// It names a value file on every disk read and write, so it allocates nothing but the result.
    package static func hex(of string: String, byteCount: Int = 16) -> String {
        let count = min(max(byteCount, 0), 32)
        return String(unsafeUninitializedCapacity: count * 2) { out in
            writeHex(of: string, into: out)
            return count * 2
        }
    }

    /// Writes the lower-case hex of the first `out.count / 2` (at most 32) bytes of the digest of
    /// `string`'s UTF-8 to the start of `out` (value file paths are built in one buffer).
    static func writeHex(of string: String, into out: UnsafeMutableBufferPointer<UInt8>) {
        var string = string
        var state = initialState
        string.withUTF8 { absorb(UnsafeRawBufferPointer($0), into: &state) }
        let count = min(out.count / 2, 32)
        withUnsafeBytes(of: &state) { words in
            for index in 0..<count {
                let word = words.load(fromByteOffset: (index / 4) * 4, as: UInt32.self)
                let byte = UInt8(truncatingIfNeeded: word >> UInt32(24 - (index % 4) * 8))
                out[2 * index] = hexDigit(byte >> 4)
                out[2 * index + 1] = hexDigit(byte & 0x0f)
            }
        }
    }

    /// The lower-case hex digit of `nibble` (0...15).
    @inline(__always)
    static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 48 + nibble : 87 + nibble
    }

    private typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    private static let initialState: State =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)

    /// Hashes the whole message: its full 64-byte blocks, then the padded tail (one or two blocks).
    private static func absorb(_ message: UnsafeRawBufferPointer, into state: inout State) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            k.withUnsafeBufferPointer { k in
                let fullBlocks = message.count / 64
                for block in 0..<fullBlocks {
                    compress(UnsafeRawBufferPointer(rebasing: message[(block * 64)..<(block * 64 + 64)]), &state, w, k)
                }
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
                    let rest = message.count - fullBlocks * 64
                    tail.initialize(repeating: 0)
                    for index in 0..<rest { tail[index] = message[fullBlocks * 64 + index] }
                    tail[rest] = 0x80
                    let tailLength = rest < 56 ? 64 : 128
                    let bitLength = UInt64(message.count) &* 8
                    for index in 0..<8 { tail[tailLength - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(index * 8)) }
                    let bytes = UnsafeRawBufferPointer(tail)
                    compress(UnsafeRawBufferPointer(rebasing: bytes[0..<64]), &state, w, k)
                    if tailLength == 128 { compress(UnsafeRawBufferPointer(rebasing: bytes[64..<128]), &state, w, k) }
                }
            }
        }
    }

    /// One 64-byte block of FIPS 180-4's compression function.
    @inline(__always)
    private static func compress(_ block: UnsafeRawBufferPointer, _ state: inout State,
                                 _ w: UnsafeMutableBufferPointer<UInt32>, _ k: UnsafeBufferPointer<UInt32>) {
        for i in 0..<16 {
            let j = i * 4
            w[i] = UInt32(block[j]) << 24 | UInt32(block[j + 1]) << 16 | UInt32(block[j + 2]) << 8 | UInt32(block[j + 3])
        }
        for i in 16..<64 {
            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, hh) = state
        for i in 0..<64 {
            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
            let choice = (e & f) ^ (~e & g)
            let t1 = hh &+ s1 &+ choice &+ k[i] &+ w[i]
            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
            let majority = (a & b) ^ (a & c) ^ (b & c)
            let t2 = s0 &+ majority
            (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                 state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ hh)
    }

    @inline(__always)
    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
}
