import Foundation

/// What the disk index knows of one stored value.
struct DiskRecord: Equatable {
    /// Makes each write's file name unique, so a new value never overwrites the old one in place.
    var generation: UInt64
    var size: Int
    /// Seconds since 1970 (`Date.distantFuture` for never).
    var expiry: Double
    /// Seconds since 1970.
    var lastAccess: Double
}

/// One line of the journal: the disk index is the replay of these, in order.
enum JournalRecord: Equatable {
    case set(key: String, DiskRecord)
    case remove(key: String)
    case access(key: String, time: Double)
    case clear
}

/// The journal's binary format.
///
/// The file starts with ``magic``; then records, each `length (u32 LE) | body | crc32(body) (u32 LE)`.
/// A body is an operation byte and its fields, little-endian, the key last as UTF-8.
/// A record whose length or checksum is wrong ends the replay: it is a torn last write or damage.
enum JournalFormat {
    static let magic = Array("STASHJ1\n".utf8)
    /// No sane record is larger (keys are at most this long); a larger length is damage.
    static let maxBodyLength = 1 << 24

    private enum Operation: UInt8 { case set = 1, remove = 2, access = 3, clear = 4 }

    /// Appends the encoding of `record` to `buffer`.
    static func append(_ record: JournalRecord, to buffer: inout [UInt8]) {
        var body: [UInt8] = []
        switch record {
        case .set(let key, let info):
            body.append(Operation.set.rawValue)
            appendInteger(info.generation, to: &body)
            appendInteger(UInt64(info.size), to: &body)
            appendInteger(info.expiry.bitPattern, to: &body)
            appendInteger(info.lastAccess.bitPattern, to: &body)
            body.append(contentsOf: key.utf8)
        case .remove(let key):
            body.append(Operation.remove.rawValue)
            body.append(contentsOf: key.utf8)
        case .access(let key, let time):
            body.append(Operation.access.rawValue)
            appendInteger(time.bitPattern, to: &body)
            body.append(contentsOf: key.utf8)
        case .clear:
            body.append(Operation.clear.rawValue)
        }
        appendInteger(UInt32(body.count), to: &buffer)
        buffer.append(contentsOf: body)
        appendInteger(CRC32.checksum(body), to: &buffer)
    }

    /// The result of reading a journal file.
    struct Replay {
        var records: [JournalRecord] = []
        /// The length of the valid prefix; anything after it is to be cut off.
        var validLength = 0
        /// What was wrong, if anything.
        var damage: String?
    }

    /// Parses `bytes` (a whole journal file); never traps, whatever the input.
    static func parse(_ bytes: [UInt8]) -> Replay {
        var replay = Replay()
        guard bytes.count >= magic.count, Array(bytes[0..<magic.count]) == magic else {
            replay.damage = bytes.isEmpty ? nil : "the journal header is not Stash's"
            return replay
        }
        var offset = magic.count
        replay.validLength = offset
        while offset < bytes.count {
            guard let length = readInteger(UInt32.self, bytes, at: offset).map(Int.init),
                  length > 0, length <= maxBodyLength, offset + 4 + length + 4 <= bytes.count else {
                replay.damage = "the journal record at byte \(offset) is torn"
                return replay
            }
            let body = bytes[(offset + 4)..<(offset + 4 + length)]
            let checksum = readInteger(UInt32.self, bytes, at: offset + 4 + length)
            guard checksum == body.withContiguousStorageIfAvailable({ CRC32.checksum(UnsafeRawBufferPointer($0)) }),
                  let record = decodeBody(bytes, offset + 4, length) else {
                replay.damage = "the journal record at byte \(offset) is damaged"
                return replay
            }
            replay.records.append(record)
            offset += 4 + length + 4
            replay.validLength = offset
        }
        return replay
    }

    /// Decodes the body of `count` bytes at `start` in `bytes` (no copy of it: opening a store
    /// decodes every record of its journal).
    private static func decodeBody(_ bytes: [UInt8], _ start: Int, _ count: Int) -> JournalRecord? {
        guard count > 0, let operation = Operation(rawValue: bytes[start]) else { return nil }
        func integer(at offset: Int) -> UInt64? {
            offset + 8 <= count ? readInteger(UInt64.self, bytes, at: start + offset) : nil
        }
        /// The key from `offset` to the end of the body; nil unless it is valid UTF-8.
        func key(from offset: Int) -> String? {
            guard offset <= count else { return nil }
            let range = (start + offset)..<(start + count)
            var key = String(decoding: bytes[range], as: UTF8.self)
            // Decoding repairs invalid UTF-8; the bytes come back unchanged only if they were valid.
            // Compared as buffers: the generic `elementsEqual` of the two views took a quarter of the
            // time it takes to open a store.
            let isValid = key.withUTF8 { decoded in
                decoded.count == range.count && bytes.withUnsafeBytes {
                    decoded.isEmpty || memcmp(decoded.baseAddress!, $0.baseAddress! + range.lowerBound, range.count) == 0
                }
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
            return .set(key: key, DiskRecord(generation: generation, size: Int(size), expiry: expiry, lastAccess: access))
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

    private static func readInteger<I: FixedWidthInteger>(_: I.Type, _ bytes: [UInt8], at offset: Int) -> I? {
        let size = MemoryLayout<I>.size
        guard offset >= 0, offset + size <= bytes.count else { return nil }
        var value: I = 0
        for index in (0..<size).reversed() { value = value << 8 | I(bytes[offset + index]) }
        return value
    }
}
