import Foundation

/// The index as of one position in the segments, written at compaction and when a large store is
/// closed, so that opening reads it in one go and replays only the records after that position.
///
/// Format (little-endian): `magic "STASHIX2" | segment u32 | salt u64 | offset u64 | count u64`, then
/// `count` entries least recently used first — `flags u8 (1: value in a file, 2: has expiry) |
/// key length (LEB128) | key | segment u32 | offset u32 | length u32 | last access f64 | [expiry f64] |
/// inline: size (LEB128), file: id u64 | size u64 | hash u64` — then XXH64 of everything before it.
///
/// The snapshot only saves work: the segments hold every record. A snapshot that is damaged, or that
/// does not match the segments (the one it names is missing, or has another salt or is shorter),
/// is ignored and the segments are replayed whole, losing nothing but the order of recent reads.
enum IndexSnapshot {
    static let magic = Array("STASHIX2".utf8)
    private static let headerLength = 36

    /// Where the snapshot's index stands: every record before it is reflected.
    struct Position: Equatable {
        var segment: UInt32
        var salt: UInt64
        var offset: Int
    }

    /// The snapshot of `index` (its entries least recently used first) at `position`.
    static func encode(_ index: LRUIndex<DiskRecord>, at position: Position) -> [UInt8] {
        var bytes = magic
        bytes.reserveCapacity(headerLength + index.count * 48 + 8)
        SegmentFormat.appendInteger(position.segment, to: &bytes)
        SegmentFormat.appendInteger(position.salt, to: &bytes)
        SegmentFormat.appendInteger(UInt64(position.offset), to: &bytes)
        SegmentFormat.appendInteger(UInt64(index.count), to: &bytes)
        let never = Date.distantFuture.timeIntervalSince1970
        index.forEachOldestFirst { key, record in
            var flags: UInt8 = record.expiry == never ? 0 : 2
            if case .file = record.value { flags |= 1 }
            bytes.append(flags)
            var key = key
            key.withUTF8 { utf8 in
                SegmentFormat.appendVarint(utf8.count, to: &bytes)
                bytes.append(contentsOf: utf8)
            }
            SegmentFormat.appendInteger(record.segment, to: &bytes)
            SegmentFormat.appendInteger(record.offset, to: &bytes)
            SegmentFormat.appendInteger(record.length, to: &bytes)
            SegmentFormat.appendInteger(record.lastAccess.bitPattern, to: &bytes)
            if flags & 2 != 0 { SegmentFormat.appendInteger(record.expiry.bitPattern, to: &bytes) }
            switch record.value {
            case .inline(let size):
                SegmentFormat.appendVarint(size, to: &bytes)
            case .file(let id, let size, let hash):
                SegmentFormat.appendInteger(id, to: &bytes)
                SegmentFormat.appendInteger(UInt64(size), to: &bytes)
                SegmentFormat.appendInteger(hash, to: &bytes)
            }
            return true
        }
        SegmentFormat.appendInteger(XXH64.hash(bytes), to: &bytes)
        return bytes
    }

    /// Parses a snapshot, handing its position and entry count to `begin`, then each entry, oldest
    /// first, to `entry`. Returns false (after maybe some entries) if the bytes are not an intact
    /// snapshot: the caller then discards what it got. Never traps.
    static func decode(_ bytes: [UInt8], begin: (Position, Int) -> Void, entry: (String, DiskRecord) -> Void) -> Bool {
        bytes.withUnsafeBytes { raw in
            guard raw.count >= headerLength + 8, raw.prefix(8).elementsEqual(magic) else { return false }
            let body = UnsafeRawBufferPointer(rebasing: raw[0..<(raw.count - 8)])
            guard XXH64.hash(body) == SegmentFormat.load(raw, raw.count - 8) as UInt64 else { return false }
            let count = SegmentFormat.load(raw, 28) as UInt64
            let position = Position(segment: SegmentFormat.load(raw, 8), salt: SegmentFormat.load(raw, 12),
                                    offset: Int(truncatingIfNeeded: SegmentFormat.load(raw, 20) as UInt64))
            guard count <= UInt64(body.count) else { return false }
            begin(position, Int(count))
            var offset = headerLength
            func has(_ length: Int) -> Bool { length >= 0 && length <= body.count - offset }
            for _ in 0..<count {
                guard has(1) else { return false }
                let flags = body[offset]
                offset += 1
                guard flags & ~3 == 0, let (keyLength, varintLength) = SegmentFormat.varint(body, at: offset) else { return false }
                offset += varintLength
                guard has(keyLength + 20),
                      let key = SegmentFormat.key(UnsafeRawBufferPointer(rebasing: body[offset..<(offset + keyLength)])) else { return false }
                offset += keyLength
                var record = DiskRecord(segment: SegmentFormat.load(body, offset), offset: SegmentFormat.load(body, offset + 4),
                                        length: SegmentFormat.load(body, offset + 8), value: .inline(size: 0),
                                        expiry: Date.distantFuture.timeIntervalSince1970,
                                        lastAccess: Double(bitPattern: SegmentFormat.load(body, offset + 12)))
                offset += 20
                if flags & 2 != 0 {
                    guard has(8) else { return false }
                    record.expiry = Double(bitPattern: SegmentFormat.load(body, offset))
                    offset += 8
                }
                if flags & 1 != 0 {
                    guard has(24) else { return false }
                    let size = SegmentFormat.load(body, offset + 8) as UInt64
                    guard size <= UInt64(Int.max) else { return false }
                    record.value = .file(id: SegmentFormat.load(body, offset), size: Int(size), hash: SegmentFormat.load(body, offset + 16))
                    offset += 24
                } else {
                    guard let (size, length) = SegmentFormat.varint(body, at: offset) else { return false }
                    record.value = .inline(size: size)
                    offset += length
                }
                guard !record.expiry.isNaN, !record.lastAccess.isNaN else { return false }
                entry(key, record)
            }
            return offset == body.count
        }
    }
}
