import Foundation

/// What a version-1 journal knew of one stored value (read only to upgrade a version-1 store).
package struct V1Record: Equatable {
    /// Makes each write's file name unique, so a new value never overwrites the old one in place.
    package var generation: UInt64
    package var size: Int
    /// Seconds since 1970 (`Date.distantFuture` for never).
    package var expiry: Double
    /// Seconds since 1970.
    package var lastAccess: Double
}

/// One line of the journal: the disk index is the replay of these, in order.
package enum JournalRecord: Equatable {
    case set(key: String, V1Record)
    case remove(key: String)
    case access(key: String, time: Double)
    case clear
}

/// The binary format of the journal of Stash's first disk format, kept to upgrade such stores.
///
/// Layout: Docs/Format.md, "Version-1 journal".
/// A record whose length or checksum is wrong ends the replay: it is a torn last write or damage.
package enum JournalFormat {
    package static let magic = Array("STASHJ1\n".utf8)
    /// No sane record is larger (keys are at most this long); a larger length is damage.
    static let maxBodyLength = 1 << 24

    private enum Operation: UInt8 { case set = 1, remove = 2, access = 3, clear = 4 }

    /// Appends the encoding of `record` to `buffer`.
    ///
    /// The body is written in place after a length placeholder (no array per record: every disk
    /// read buffers an access record), then the length is filled in and the checksum appended.
    package static func append(_ record: JournalRecord, to buffer: inout [UInt8]) {
        let start = buffer.count
        appendInteger(UInt32(0), to: &buffer)
        switch record {
        case .set(let key, let info):
            buffer.append(Operation.set.rawValue)
            appendInteger(info.generation, to: &buffer)
            appendInteger(UInt64(info.size), to: &buffer)
            appendInteger(info.expiry.bitPattern, to: &buffer)
            appendInteger(info.lastAccess.bitPattern, to: &buffer)
            buffer.append(contentsOf: key.utf8)
        case .remove(let key):
            buffer.append(Operation.remove.rawValue)
            buffer.append(contentsOf: key.utf8)
        case .access(let key, let time):
            buffer.append(Operation.access.rawValue)
            appendInteger(time.bitPattern, to: &buffer)
            buffer.append(contentsOf: key.utf8)
        case .clear:
            buffer.append(Operation.clear.rawValue)
        }
        let bodyStart = start + 4
        let length = buffer.count - bodyStart
        let checksum = buffer.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(length).littleEndian, toByteOffset: start, as: UInt32.self)
            return CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[bodyStart...]))
        }
        appendInteger(checksum, to: &buffer)
    }

    /// The result of reading a journal file.
    package struct Replay {
        package var records: [JournalRecord] = []
        /// The length of the valid prefix; anything after it is to be cut off.
        var validLength = 0
        /// What was wrong, if anything.
        package var damage: String?
    }

    /// Parses `bytes` (a whole journal file); never traps, whatever the input.
    package static func parse(_ bytes: [UInt8]) -> Replay {
        var records: [JournalRecord] = []
        let (validLength, damage) = parse(bytes) { records.append($0) }
        return Replay(records: records, validLength: validLength, damage: damage)
    }

    /// Parses `bytes` (a whole journal file) and hands each valid record to `body`, in order, without
    /// collecting them (opening a store replays every record of its journal); never traps.
    /// - Returns: The length of the valid prefix and what was wrong after it, if anything.
    package static func parse(_ bytes: [UInt8], _ body: (JournalRecord) -> Void) -> (validLength: Int, damage: String?) {
        guard bytes.count >= magic.count, bytes[0..<magic.count].elementsEqual(magic) else {
            return (0, bytes.isEmpty ? nil : "the journal header is not Stash's")
        }
        return bytes.withUnsafeBytes { raw in
            var offset = magic.count
            while offset < raw.count {
                guard offset + 4 <= raw.count,
                      case let length = Int(exactly: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self).littleEndian) ?? .max,
                      length > 0, length <= maxBodyLength, offset + 4 + length + 4 <= raw.count else {
                    return (offset, "the journal record at byte \(offset) is torn")
                }
                let recordBody = UnsafeRawBufferPointer(rebasing: raw[(offset + 4)..<(offset + 4 + length)])
                let checksum = raw.loadUnaligned(fromByteOffset: offset + 4 + length, as: UInt32.self).littleEndian
                guard checksum == CRC32.checksum(recordBody), let record = decodeBody(recordBody) else {
                    return (offset, "the journal record at byte \(offset) is damaged")
                }
                body(record)
                offset += 4 + length + 4
            }
            return (offset, nil)
        }
    }

    /// Decodes one record's body (no copy of it).
    private static func decodeBody(_ body: UnsafeRawBufferPointer) -> JournalRecord? {
        let count = body.count
        guard count > 0, let operation = Operation(rawValue: body[0]) else { return nil }
        func integer(at offset: Int) -> UInt64? {
            offset + 8 <= count ? body.loadUnaligned(fromByteOffset: offset, as: UInt64.self).littleEndian : nil
        }
        /// The key from `offset` to the end of the body; nil unless it is valid UTF-8.
        func key(from offset: Int) -> String? {
            guard offset <= count else { return nil }
            let utf8 = UnsafeRawBufferPointer(rebasing: body[offset...])
            var key = String(decoding: utf8, as: UTF8.self)
            // Decoding repairs invalid UTF-8; the bytes come back unchanged only if they were valid.
            // Compared as buffers: the generic `elementsEqual` of the two views took a quarter of the
            // time it takes to open a store.
            let isValid = key.withUTF8 { decoded in
                decoded.count == utf8.count
                    && (decoded.isEmpty || memcmp(decoded.baseAddress!, utf8.baseAddress!, utf8.count) == 0)
            }
            return isValid ? key : nil
        }
        switch operation {
        case .set:
            guard count >= 33,
                  let generation = integer(at: 1),
                  let size = integer(at: 9), size <= UInt64(Int.max),
                  let expiry = integer(at: 17).map(Double.init(bitPattern:)),
                  let access = integer(at: 25).map(Double.init(bitPattern:)),
                  let key = key(from: 33) else { return nil }
            return .set(key: key, V1Record(generation: generation, size: Int(size), expiry: expiry, lastAccess: access))
        case .remove:
            return key(from: 1).map { .remove(key: $0) }
        case .access:
            guard let time = integer(at: 1).map(Double.init(bitPattern:)),
                  let key = key(from: 9) else { return nil }
            return .access(key: key, time: time)
        case .clear:
            return count == 1 ? .clear : nil
        }
    }

    private static func appendInteger<I: FixedWidthInteger>(_ value: I, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }
}
