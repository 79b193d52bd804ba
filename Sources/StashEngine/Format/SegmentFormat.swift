import Foundation

/// Where a set record's value lives.
package enum StoredValue: Equatable {
    /// Inside the record, `size` bytes from ``SetInfo/valueOffset``.
    case inline(size: Int)
    /// In the value file `id` (``ValueFiles``), `size` bytes whose XXH64 is `hash`.
    case file(id: UInt64, size: Int, hash: UInt64)

    package var size: Int {
        switch self {
        case .inline(let size), .file(_, let size, _): return size
        }
    }
}

/// What a set record says besides its key.
package struct SetInfo: Equatable {
    /// A ``StoredTime``; ``StoredTime/never`` for never.
    package var expiry: Double
    /// When the value was written or last used, as of this record (a ``StoredTime``).
    package var time: Double
    package var value: StoredValue
    /// Where an inline value starts, counted from the record's first byte.
    var valueOffset: Int
}

/// One record of a segment. The index is the replay of these, in order.
package enum SegmentRecord: Equatable {
    case set(key: String, SetInfo)
    /// A tombstone.
    case remove(key: String)
    /// Everything before it is gone (``WritePath/removeAll()``).
    case clear
    /// The value written by the set record at `segment`/`offset` was used at `time`: keeps the LRU
    /// order across a restart without writing the key again on every read. `keyHash` (the key's
    /// ``KeyHash``; nil in records of stores before format 4) finds the entry in the key directory.
    case access(segment: UInt32, offset: UInt32, time: Double, keyHash: UInt64?)
    /// The next `count` records, `length` bytes in all, are one batch: replay applies them only if
    /// every one of them is there and verifies (``WritePath/writeBatch(_:now:maxSize:durable:storesValuesAsFiles:)``).
    case batch(count: Int, length: Int)
}

/// The segment files' binary format: a header in two checked copies, then checksummed records
/// (set, remove, clear, access, batch) that replay can resync on after damage.
/// Layout: Docs/Format.md, "Segments".
package enum SegmentFormat {
    package static let magic = Array("STASHSG3".utf8)
    static let version2Magic = Array("STASHSG2".utf8)
    /// The length of a (version-3) segment header; records start here.
    static let headerLength = 80
    private static let headerCopyLength = 40
    static let version2HeaderLength = 64
    private static let version2CopyLength = 32
    static let recordHeaderLength = 8
    /// No record is longer: keys are at most 1 MiB, and values of ``ValueFiles/threshold`` or more go
    /// to files of their own. Also what bounds the work of a resync after damage: a candidate
    /// position is hashed over at most this many bytes.
    static let maxBodyLength = DiskStore.maxKeyLength + ValueFiles.threshold + 64
    /// Header flag: the segment was written by compaction, so its set records are copies, which replay
    /// keeps in their entries' place in the order of use (``Replayer``). Replay never sees an unfinished
    /// one, which keeps its temporary name until the compaction commits.
    static let compactionFlag: UInt32 = 1

    /// What a segment's header says.
    package struct Header: Equatable {
        package var id: UInt32
        var salt: UInt64
        package var flags: UInt32
        /// The identity of the store that wrote it; nil for a version-2 header.
        package var store: UInt64?
        /// Every segment numbered below this one is superseded (0: none).
        package var floor: UInt32
        /// Where its records start.
        package var length: Int { store == nil ? version2HeaderLength : headerLength }
    }

    package enum Kind: UInt8 { case setInline = 1, setFile = 2, remove = 3, clear = 4, access = 5, batch = 6 }
    static let hasExpiry: UInt8 = 0x10
    /// Kind-byte flag of set and access records: their times are seconds since 2001 (``StoredTime``),
    /// not seconds since 1970. Every such record is written with it.
    static let referenceSeconds: UInt8 = 0x20

    // MARK: Header

    package static func header(_ header: Header) -> [UInt8] {
        var copy: [UInt8] = magic
        appendInteger(header.id, to: &copy)
        appendInteger(header.floor, to: &copy)
        appendInteger(header.salt, to: &copy)
        appendInteger(header.store ?? 0, to: &copy)
        appendInteger(header.flags, to: &copy)
        appendInteger(UInt32(truncatingIfNeeded: XXH64.hash(copy)), to: &copy)
        return copy + copy
    }

    /// The header of a segment, from whichever copy is intact (version 3, or version 2); nil if
    /// neither is.
    static func parseHeader(_ bytes: UnsafeRawBufferPointer) -> Header? {
        for start in [0, headerCopyLength] where bytes.count >= start + headerCopyLength {
            let copy = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + headerCopyLength)])
            guard copy.prefix(8).elementsEqual(magic), isChecked(copy) else { continue }
            return Header(id: load(copy, 8), salt: load(copy, 16), flags: load(copy, 32), store: load(copy, 24), floor: load(copy, 12))
        }
        for start in [0, version2CopyLength] where bytes.count >= start + version2CopyLength {
            let copy = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + version2CopyLength)])
            guard copy.prefix(8).elementsEqual(version2Magic), isChecked(copy), (load(copy, 8) as UInt64) <= UInt64(UInt32.max) else { continue }
            return Header(id: UInt32(load(copy, 8) as UInt64), salt: load(copy, 16), flags: load(copy, 24), store: nil, floor: 0)
        }
        return nil
    }

    /// Whether the last 4 bytes of a header copy are the checksum of the bytes before them.
    private static func isChecked(_ copy: UnsafeRawBufferPointer) -> Bool {
        let end = copy.count - 4
        return UInt32(truncatingIfNeeded: XXH64.hash(UnsafeRawBufferPointer(rebasing: copy[0..<end]))) == load(copy, end)
    }

    // MARK: Decoding

    /// The record at `offset` and its length, or nil unless one that verifies starts exactly there.
    /// Never traps, whatever the bytes.
    package static func record(in bytes: UnsafeRawBufferPointer, at offset: Int, salt: UInt64) -> (SegmentRecord, length: Int)? {
        guard let (record, length) = verified(bytes, at: offset, salt: salt) else { return nil }
        return decodeBody(record.body, kind: record.kind, flags: record.flags).map { ($0, length) }
    }

    /// The body and kind of the record at `offset`, and its length, once its length and checksum hold;
    /// nil otherwise. Never traps.
    private static func verified(_ bytes: UnsafeRawBufferPointer, at offset: Int, salt: UInt64)
        -> ((kind: Kind, flags: UInt8, body: UnsafeRawBufferPointer), length: Int)? {
        guard offset >= 0, offset + recordHeaderLength < bytes.count else { return nil }
        let bodyLength = Int(exactly: load(bytes, offset + 4) as UInt32) ?? .max // past Int where Int has 32 bits
        guard bodyLength >= 1, bodyLength <= maxBodyLength, bodyLength <= bytes.count - offset - recordHeaderLength,
              let kind = Kind(rawValue: bytes[offset + 8] & 0x0f), bytes[offset + 8] & 0xc0 == 0 else { return nil }
        let length = recordHeaderLength + bodyLength
        let checked = UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + length)])
        guard UInt32(truncatingIfNeeded: XXH64.hash(checked, seed: salt)) == load(bytes, offset) as UInt32 else { return nil }
        let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + 8)..<(offset + length)])
        return ((kind, body[0] & 0xf0, body), length)
    }

    /// The set record that `bytes` holds, exactly and verified: where its key's bytes are (counted from
    /// the record's first byte, as ``SetInfo/valueOffset`` is) and what it says, without decoding the
    /// key (a read compares it in place: ``SegmentLog/isSameKey(_:_:)``). nil unless a valid set record
    /// is exactly there; never traps.
    static func setRecord(_ bytes: UnsafeRawBufferPointer, salt: UInt64) -> (key: Range<Int>, info: SetInfo)? {
        guard bytes.count > recordHeaderLength, let (record, length) = verified(bytes, at: 0, salt: salt),
              length == bytes.count, record.kind == .setInline || record.kind == .setFile,
              let (key, info) = setFields(record.body, kind: record.kind, flags: record.flags) else { return nil }
        return (key.lowerBound + recordHeaderLength..<key.upperBound + recordHeaderLength, info)
    }

    /// The fields of a set record's body; the key as the range of its bytes in `body`.
    private static func setFields(_ body: UnsafeRawBufferPointer, kind: Kind, flags: UInt8) -> (key: Range<Int>, info: SetInfo)? {
        var position = 1
        guard body.count >= position + 8 else { return nil }
        var time = Double(bitPattern: load(body, position))
        position += 8
        var expiry = StoredTime.never
        if flags & hasExpiry != 0 {
            guard body.count >= position + 8 else { return nil }
            expiry = Double(bitPattern: load(body, position))
            position += 8
            if flags & referenceSeconds == 0 { expiry = StoredTime.fromSeconds1970(expiry) }
        }
        if flags & referenceSeconds == 0 { time = StoredTime.fromSeconds1970(time) }
        guard !time.isNaN, !expiry.isNaN, let (keyLength, varintLength) = varint(body, at: position) else { return nil }
        position += varintLength
        guard keyLength <= body.count - position else { return nil }
        let key = position..<(position + keyLength)
        position += keyLength
        let value: StoredValue
        if kind == .setInline {
            value = .inline(size: body.count - position)
        } else {
            guard body.count - position == 24 else { return nil }
            let size = load(body, position + 8) as UInt64
            guard size <= UInt64(Int.max) else { return nil }
            value = .file(id: load(body, position), size: Int(size), hash: load(body, position + 16))
        }
        return (key, SetInfo(expiry: expiry, time: time, value: value, valueOffset: recordHeaderLength + position))
    }

    private static func decodeBody(_ body: UnsafeRawBufferPointer, kind: Kind, flags: UInt8) -> SegmentRecord? {
        let expiryFollows = flags & hasExpiry != 0
        switch kind {
        case .setInline, .setFile:
            guard let (range, info) = setFields(body, kind: kind, flags: flags),
                  let key = key(UnsafeRawBufferPointer(rebasing: body[range])) else { return nil }
            return .set(key: key, info)
        case .remove:
            return key(UnsafeRawBufferPointer(rebasing: body[1...])).map { .remove(key: $0) }
        case .clear:
            return body.count == 1 && !expiryFollows ? .clear : nil
        case .batch:
            guard body.count == 9, !expiryFollows else { return nil }
            guard let count = FileNumber.int(load(body, 1) as UInt32), let length = FileNumber.int(load(body, 5) as UInt32) else { return nil }
            return .batch(count: count, length: length)
        case .access:
            guard body.count == 17 || body.count == 25, !expiryFollows else { return nil }
            let stored = Double(bitPattern: load(body, 9))
            let time = flags & referenceSeconds == 0 ? StoredTime.fromSeconds1970(stored) : stored
            let keyHash: UInt64? = body.count == 25 ? load(body, 17) : nil
            return time.isNaN ? nil : .access(segment: load(body, 1), offset: load(body, 5), time: time, keyHash: keyHash)
        }
    }

    /// What walking a segment found.
    package struct Scan {
        /// Where the last valid record ends: appends continue here, anything after is cut off.
        var validEnd: Int
        /// Byte ranges that held no valid record, skipped (damage, or a torn last write at the end).
        package var damaged: [Range<Int>] = []
    }

    /// Walks the records of `bytes` (a whole segment) from `start`, handing each valid one to
    /// `visit` with its offset and length. After damage it resynchronises on the next position where
    /// a record verifies, so a damaged record loses itself, not the records after it. Never traps.
    package static func scan(_ bytes: UnsafeRawBufferPointer, salt: UInt64, from start: Int,
                     visit: (SegmentRecord, _ offset: Int, _ length: Int) -> Void) -> Scan {
        var offset = start
        var scan = Scan(validEnd: start)
        // No record starts in trailing zeros (its length would be 0): the search for the next valid
        // record stops there, so that the room a writer reserves at the end of its segment (a
        // mebibyte of zeros) is not tried byte by byte.
        let zerosStart = trailingZerosStart(bytes, from: start)
        while offset < bytes.count {
            if let (record, length) = record(in: bytes, at: offset, salt: salt) {
                visit(record, offset, length)
                offset += length
                scan.validEnd = offset
                continue
            }
            var next = offset + 1
            while next < zerosStart, record(in: bytes, at: next, salt: salt) == nil { next += 1 }
            if next >= zerosStart { next = bytes.count }
            scan.damaged.append(offset..<next)
            offset = next
        }
        return scan
    }

    // MARK: Helpers

    /// Where the zeros that end `bytes` begin (`bytes.count` if its last byte is not 0), not before `start`.
    static func trailingZerosStart(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int {
        var end = bytes.count
        while end - start >= 8, bytes.loadUnaligned(fromByteOffset: end - 8, as: UInt64.self) == 0 { end -= 8 }
        while end > start, bytes[end - 1] == 0 { end -= 1 }
        return end
    }

    /// A key's UTF-8, or nil unless it is valid UTF-8.
    package static func key(_ utf8: UnsafeRawBufferPointer) -> String? {
        let key = String(decoding: utf8, as: UTF8.self)
        // Decoding repairs invalid UTF-8: the bytes come back unchanged only if they were valid.
        var copy = key
        let isValid = copy.withUTF8 { decoded in
            decoded.count == utf8.count && (decoded.isEmpty || memcmp(decoded.baseAddress!, utf8.baseAddress!, utf8.count) == 0)
        }
        return isValid ? key : nil
    }

    package static func load<I: FixedWidthInteger>(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> I {
        I(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: I.self))
    }

    static func appendInteger<I: FixedWidthInteger>(_ value: I, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// The length of `value` as a LEB128 number.
    static func varintLength(_ value: Int) -> Int {
        var length = 1
        var rest = UInt64(value) >> 7
        while rest > 0 {
            length += 1
            rest >>= 7
        }
        return length
    }

    /// A LEB128 number at `offset` and its length in bytes; nil if torn or longer than 4 bytes (28 bits).
    static func varint(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> (Int, Int)? {
        var value = 0
        for index in 0..<4 where offset + index < bytes.count {
            let byte = bytes[offset + index]
            value |= Int(byte & 0x7f) << (7 * index)
            if byte & 0x80 == 0 { return (value, index + 1) }
        }
        return nil
    }
}
