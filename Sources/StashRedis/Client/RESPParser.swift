import Foundation

/// Reads RESP2 and RESP3 replies out of the bytes a socket delivers, however they are split.
///
/// ``next()`` returns nil until a whole reply is buffered; a reply that can never parse throws
/// ``RedisError/protocolError(_:)`` (the connection is then dropped: its stream is out of step).
struct RESPParser {
    private var buffer: [UInt8] = []
    private var start = 0

    /// Nesting deeper than this is no reply Redis sends for the commands Stash uses.
    static let maximumDepth = 64

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0, start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole reply, or nil when more bytes are needed.
    mutating func next() throws -> RESPValue? {
        var index = start
        guard let value = try parse(at: &index, depth: 0) else { return nil }
        start = index
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return value
    }

    private func parse(at index: inout Int, depth: Int) throws -> RESPValue? {
        guard depth < Self.maximumDepth else { throw RedisError.protocolError("reply nested deeper than \(Self.maximumDepth)") }
        guard index < buffer.count else { return nil }
        let type = buffer[index]
        var cursor = index + 1
        guard let line = try line(at: &cursor) else { return nil }
        let value: RESPValue
        switch type {
        case UInt8(ascii: "+"): value = .simpleString(text(line))
        case UInt8(ascii: "-"), UInt8(ascii: "!"):
            // `!` is RESP3's blob error: its line is a length, then the text.
            if type == UInt8(ascii: "!") {
                guard let body = try blob(length: line, at: &cursor) else { return nil }
                value = .error(String(decoding: body, as: UTF8.self))
            } else {
                value = .error(text(line))
            }
        case UInt8(ascii: ":"): value = .integer(try number(line))
        case UInt8(ascii: "_"): value = .null
        case UInt8(ascii: "#"): value = .boolean(text(line) == "t")
        case UInt8(ascii: ","):
            guard let double = Double(text(line).replacingOccurrences(of: "inf", with: "infinity")) else {
                throw RedisError.protocolError("bad double '\(text(line))'")
            }
            value = .double(double)
        case UInt8(ascii: "("): value = .simpleString(text(line)) // big number, kept as text
        case UInt8(ascii: "$"), UInt8(ascii: "="):
            if try number(line) < 0 { value = .null; break }
            guard let body = try blob(length: line, at: &cursor) else { return nil }
            // Copied straight from the buffer's memory: `Data(some Sequence)` would go through generic casts.
            value = .bulkString(body.withUnsafeBytes { Data($0) })
        case UInt8(ascii: "*"), UInt8(ascii: "~"), UInt8(ascii: ">"):
            let count = try size(line)
            if count < 0 { value = .null; break }
            var elements: [RESPValue] = []
            elements.reserveCapacity(min(count, 1024))
            for _ in 0..<count {
                guard let element = try parse(at: &cursor, depth: depth + 1) else { return nil }
                elements.append(element)
            }
            value = type == UInt8(ascii: ">") ? .push(elements) : .array(elements)
        case UInt8(ascii: "%"), UInt8(ascii: "|"):
            let count = try size(line)
            var pairs: [(RESPValue, RESPValue)] = []
            for _ in 0..<max(0, count) {
                guard let key = try parse(at: &cursor, depth: depth + 1),
                      let element = try parse(at: &cursor, depth: depth + 1) else { return nil }
                pairs.append((key, element))
            }
            if type == UInt8(ascii: "|") {
                // An attribute annotates the reply that follows it; Stash needs only the reply.
                guard let reply = try parse(at: &cursor, depth: depth + 1) else { return nil }
                value = reply
            } else {
                value = .map(pairs)
            }
        default:
            throw RedisError.protocolError("unknown reply type byte \(type)")
        }
        index = cursor
        return value
    }

    /// The bytes up to the next CRLF, moving `cursor` past it; nil when the CRLF is not buffered yet.
    private func line(at cursor: inout Int) throws -> Range<Int>? {
        var end = cursor
        while end + 1 < buffer.count {
            if buffer[end] == 13 && buffer[end + 1] == 10 {
                let range = cursor..<end
                cursor = end + 2
                return range
            }
            end += 1
        }
        return nil
    }

    private func blob(length line: Range<Int>, at cursor: inout Int) throws -> ArraySlice<UInt8>? {
        let length = try size(line)
        guard length >= 0 else { throw RedisError.protocolError("negative length \(length)") }
        guard buffer.count - cursor >= length + 2 else { return nil }
        let body = buffer[cursor..<(cursor + length)]
        guard buffer[cursor + length] == 13, buffer[cursor + length + 1] == 10 else {
            throw RedisError.protocolError("a string does not end with CRLF")
        }
        cursor += length + 2
        return body
    }

    private func text(_ range: Range<Int>) -> String {
        String(decoding: buffer[range], as: UTF8.self)
    }

    /// A length or a count in `range`: a number that also fits this platform's `Int` (a reply
    /// longer than 2 GiB cannot be held where `Int` has 32 bits).
    private func size(_ range: Range<Int>) throws -> Int {
        guard let size = Int(exactly: try number(range)) else { throw RedisError.protocolError("length '\(text(range))' too large") }
        return size
    }

    /// The decimal number in `range`, read digit by digit (this runs for every reply). RESP integers
    /// are signed 64-bit: anything outside that range is a protocol error, never a wrapped value.
    private func number(_ range: Range<Int>) throws -> Int64 {
        var index = range.lowerBound
        let negative = index < range.upperBound && buffer[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < range.upperBound, range.count <= 20 else { throw RedisError.protocolError("bad number '\(text(range))'") }
        // Accumulated as a negative number: its range reaches Int64.min, which a positive one cannot.
        var value: Int64 = 0
        while index < range.upperBound {
            let digit = buffer[index] &- UInt8(ascii: "0")
            guard digit < 10 else { throw RedisError.protocolError("bad number '\(text(range))'") }
            let (times10, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, overflow2) = times10.subtractingReportingOverflow(Int64(digit))
            guard !overflow, !overflow2 else { throw RedisError.protocolError("number '\(text(range))' out of range") }
            value = next
            index += 1
        }
        guard negative || value != .min else { throw RedisError.protocolError("number '\(text(range))' out of range") }
        return negative ? value : -value
    }
}
