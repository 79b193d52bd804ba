import Foundation

// Each record is encoded in place: its length is known up front (``setLength(keyCount:expiry:inlineCount:value:)``
// and its siblings), and its fields are stored into the caller's bytes (``encodeSet(key:expiry:time:value:inlineBytes:salt:into:)``),
// which the store keeps from one write to the next. Appending field by field to an `Array` cost
// ~1,000 instructions more per set record (see Docs/Architecture.md, "The hot path"). The `append…`
// functions, which add a record to an array, are for the paths that are not hot (compaction, the
// upgrade, batches, tests): they encode the same bytes.

extension SegmentFormat {
    private static let neverExpires = StoredTime.never

    /// The length of a set record whose key has `keyCount` UTF-8 bytes (`inlineCount`: the inline value's bytes).
    static func setLength(keyCount: Int, expiry: Double, inlineCount: Int, value: StoredValue) -> Int {
        let valueLength = if case .file = value { 24 } else { inlineCount }
        return recordHeaderLength + 9 + (expiry == neverExpires ? 0 : 8) + varintLength(keyCount) + keyCount + valueLength
    }

    /// Encodes a set record into `out`, which has exactly its ``setLength(keyCount:expiry:inlineCount:value:)``
    /// bytes; returns where its inline value starts within it.
    static func encodeSet(key: UnsafeRawBufferPointer, expiry: Double, time: Double, value: StoredValue,
                          inlineBytes: UnsafeRawBufferPointer?, salt: UInt64, into out: UnsafeMutableRawBufferPointer) -> Int {
        let never = expiry == neverExpires
        let kind: Kind = if case .file = value { .setFile } else { .setInline }
        var writer = RecordWriter(out)
        writer.byte(kind.rawValue | referenceSeconds | (never ? 0 : hasExpiry))
        writer.integer(time.bitPattern)
        if !never { writer.integer(expiry.bitPattern) }
        writer.varint(key.count)
        writer.bytes(key)
        let valueOffset = writer.offset
        switch value {
        case .inline:
            if let inlineBytes { writer.bytes(inlineBytes) }
        case .file(let id, let size, let hash):
            writer.integer(id)
            writer.integer(UInt64(size))
            writer.integer(hash)
        }
        writer.finish(salt: salt)
        return valueOffset
    }

    static func removeLength(keyCount: Int) -> Int { recordHeaderLength + 1 + keyCount }

    /// Encodes a tombstone into `out` (exactly its ``removeLength(keyCount:)`` bytes).
    static func encodeRemove(key: UnsafeRawBufferPointer, salt: UInt64, into out: UnsafeMutableRawBufferPointer) {
        var writer = RecordWriter(out)
        writer.byte(Kind.remove.rawValue)
        writer.bytes(key)
        writer.finish(salt: salt)
    }

    static let clearLength = recordHeaderLength + 1

    static func encodeClear(salt: UInt64, into out: UnsafeMutableRawBufferPointer) {
        var writer = RecordWriter(out)
        writer.byte(Kind.clear.rawValue)
        writer.finish(salt: salt)
    }

    static let accessLength = recordHeaderLength + 25

    static func encodeAccess(segment: UInt32, offset: UInt32, time: Double, keyHash: UInt64, salt: UInt64,
                             into out: UnsafeMutableRawBufferPointer) {
        var writer = RecordWriter(out)
        writer.byte(Kind.access.rawValue | referenceSeconds)
        writer.integer(segment)
        writer.integer(offset)
        writer.integer(time.bitPattern)
        writer.integer(keyHash)
        writer.finish(salt: salt)
    }

    static let batchLength = recordHeaderLength + 9

    static func encodeBatch(count: Int, length: Int, salt: UInt64, into out: UnsafeMutableRawBufferPointer) {
        var writer = RecordWriter(out)
        writer.byte(Kind.batch.rawValue)
        writer.integer(UInt32(count))
        writer.integer(UInt32(length))
        writer.finish(salt: salt)
    }

    /// Appends a set record; returns its length and where its inline value starts within it.
    @discardableResult
    static func appendSet(key: String, expiry: Double, time: Double, value: StoredValue, inlineBytes: UnsafeRawBufferPointer?,
                          salt: UInt64, to buffer: inout [UInt8]) -> (length: Int, valueOffset: Int) {
        var key = key
        return key.withUTF8 { utf8 in
            let length = setLength(keyCount: utf8.count, expiry: expiry, inlineCount: inlineBytes?.count ?? 0, value: value)
            let valueOffset = append(length, to: &buffer) { out in
                encodeSet(key: UnsafeRawBufferPointer(utf8), expiry: expiry, time: time, value: value, inlineBytes: inlineBytes,
                          salt: salt, into: out)
            }
            return (length, valueOffset)
        }
    }

    @discardableResult
    static func appendRemove(key: String, salt: UInt64, to buffer: inout [UInt8]) -> Int {
        var key = key
        return key.withUTF8 { utf8 in
            let length = removeLength(keyCount: utf8.count)
            append(length, to: &buffer) { encodeRemove(key: UnsafeRawBufferPointer(utf8), salt: salt, into: $0) }
            return length
        }
    }

    @discardableResult
    static func appendClear(salt: UInt64, to buffer: inout [UInt8]) -> Int {
        append(clearLength, to: &buffer) { encodeClear(salt: salt, into: $0) }
        return clearLength
    }

    @discardableResult
    static func appendAccess(segment: UInt32, offset: UInt32, time: Double, keyHash: UInt64, salt: UInt64, to buffer: inout [UInt8]) -> Int {
        append(accessLength, to: &buffer) { encodeAccess(segment: segment, offset: offset, time: time, keyHash: keyHash, salt: salt, into: $0) }
        return accessLength
    }

    /// Appends a batch record: the `count` records of `length` bytes that follow are one batch.
    @discardableResult
    static func appendBatch(count: Int, length: Int, salt: UInt64, to buffer: inout [UInt8]) -> Int {
        append(batchLength, to: &buffer) { encodeBatch(count: count, length: length, salt: salt, into: $0) }
        return batchLength
    }

    /// Grows `buffer` by `length` bytes and lets `encode` fill them.
    private static func append<Result>(_ length: Int, to buffer: inout [UInt8], _ encode: (UnsafeMutableRawBufferPointer) -> Result) -> Result {
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: length))
        return buffer.withUnsafeMutableBytes { encode(UnsafeMutableRawBufferPointer(rebasing: $0[start..<(start + length)])) }
    }

    /// Stores a record's fields one after the other into its bytes, after the 8 bytes of checksum
    /// and length that ``finish(salt:)`` fills in last.
    private struct RecordWriter {
        package let out: UnsafeMutableRawBufferPointer
        package private(set) var offset = SegmentFormat.recordHeaderLength

        package init(_ out: UnsafeMutableRawBufferPointer) {
            self.out = out
        }

        package mutating func byte(_ value: UInt8) {
            out[offset] = value
            offset += 1
        }

        package mutating func integer<I: FixedWidthInteger>(_ value: I) {
            out.storeBytes(of: value.littleEndian, toByteOffset: offset, as: I.self)
            offset += MemoryLayout<I>.size
        }

        mutating func varint(_ value: Int) {
            var rest = UInt64(value)
            while rest >= 0x80 {
                byte(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            byte(UInt8(rest))
        }

        package mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
            guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
            (out.baseAddress! + offset).copyMemory(from: source, byteCount: bytes.count)
            offset += bytes.count
        }

        /// Fills in the length and the checksum (over the length and the body).
        package func finish(salt: UInt64) {
            precondition(offset == out.count, "a record's length was computed wrong")
            out.storeBytes(of: UInt32(out.count - SegmentFormat.recordHeaderLength).littleEndian, toByteOffset: 4, as: UInt32.self)
            let checked = UnsafeRawBufferPointer(rebasing: out[4...])
            out.storeBytes(of: UInt32(truncatingIfNeeded: XXH64.hash(checked, seed: salt)).littleEndian, toByteOffset: 0, as: UInt32.self)
        }
    }
}
