/// The key directory's hash of a key: stable across processes and runs (unlike `Hasher`, which is
/// seeded per process), and the same for every canonically equivalent spelling (Contract item 8).
///
/// It is XXH64, seeded with the store's identity, of the key's UTF-8 in Normalization Form C — the
/// form the standard library compares strings in. ASCII keys are their own NFC form, so they are
/// hashed as they are; others are normalized by the standard library first. Seeded per store, so
/// keys chosen to collide in one store do not collide in another.
package enum KeyHash {
    /// The hash of `key` in a store whose identity is `seed`; never 0 (the directory's empty slot).
    package static func of(_ key: String, seed: UInt64) -> UInt64 {
        var key = key
        let hash = key.withUTF8 { utf8 -> UInt64? in
            // ASCII only: already NFC. Eight bytes at a time where it can.
            var index = 0
            let count = utf8.count
            let raw = UnsafeRawBufferPointer(utf8)
            while index + 8 <= count {
                if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return nil }
                index += 8
            }
            while index < count {
                if utf8[index] >= 0x80 { return nil }
                index += 1
            }
            return XXH64.hash(raw, seed: seed)
        } ?? normalizedHash(key, seed: seed)
        return hash == 0 ? 1 : hash
    }

    private static func normalizedHash(_ key: String, seed: UInt64) -> UInt64 {
        var nfc: [UInt8] = []
        nfc.reserveCapacity(key.utf8.count)
        key._withNFCCodeUnits { nfc.append($0) }
        return nfc.withUnsafeBytes { XXH64.hash($0, seed: seed) }
    }
}
