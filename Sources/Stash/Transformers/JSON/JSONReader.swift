import Foundation

/// The input of one decoding, already validated by ``JSONScanner/validate(_:)``, and what the
/// containers reading it share: the coding path and the end of the last container read to its end.
///
/// Anything the streaming path cannot decode exactly as Foundation would (a number written another
/// way, a type mismatch, a missing key, `superDecoder`) sets ``fallback`` and throws: the whole value
/// is then decoded by Foundation, whose value or error (with its coding path) the caller gets.
final class JSONReader {
    /// Emptied when the decoding returns, so a decoder kept by a value reads nothing afterwards.
    @exclusivity(unchecked) var text: UnsafeBufferPointer<UInt8>
    let options: JSONCoderOptions
    let userInfo: [CodingUserInfoKey: Any]
    @exclusivity(unchecked) var path: [any CodingKey] = []
    @exclusivity(unchecked) var fallback = false
    /// The `{` or `[` of the last container a cursor reached the end of, and the index after its end:
    /// the parent moves on without skipping the child again.
    @exclusivity(unchecked) var closedStart = -1
    @exclusivity(unchecked) var closedEnd = -1

    init(text: UnsafeBufferPointer<UInt8>, options: JSONCoderOptions, userInfo: [CodingUserInfoKey: Any]) {
        self.text = text
        self.options = options
        self.userInfo = userInfo
    }

    /// The byte at `index`, or 0 past the end.
    @inline(__always) func at(_ index: Int) -> UInt8 {
        index >= 0 && index < text.count ? text[index] : 0
    }

    func decline() -> JSONFallback {
        fallback = true
        return JSONFallback()
    }

    /// The index after the value starting at `start`.
    func end(ofValueAt start: Int) -> Int {
        start == closedStart ? closedEnd : JSONScanner.skipValue(text, start)
    }

    /// The index of the next member or element after a value ending at `end`, recording a container's
    /// end when it is reached.
    func next(after end: Int, open: Int) -> Int {
        var index = JSONScanner.skipSpace(text, end)
        if at(index) == UInt8(ascii: ",") {
            index = JSONScanner.skipSpace(text, index + 1)
        } else if at(index) == UInt8(ascii: "}") || at(index) == UInt8(ascii: "]") {
            closedStart = open
            closedEnd = index + 1
        }
        return index
    }

    // MARK: Values

    /// Decodes the value at `start`: the types Foundation special-cases and common ones directly,
    /// anything else through its `init(from:)`. Returns the value and the index after it.
    func value<T: Decodable>(_ type: T.Type, at start: Int, key: (any CodingKey)?, depth: Int, end: inout Int) throws -> T {
        if T.self == String.self { let (value, after) = try string(at: start); end = after; return cast(value) }
        if T.self == Int.self { let (value, after) = try integer(Int.self, at: start); end = after; return cast(value) }
        if T.self == Double.self { let (value, after) = try double(at: start); end = after; return cast(value) }
        if T.self == Bool.self { let (value, after) = try bool(at: start); end = after; return cast(value) }
        if T.self == Float.self { let (value, after) = try float(at: start); end = after; return cast(value) }
        if T.self == Date.self, let (value, after) = try date(at: start) { end = after; return cast(value) }
        if T.self == Data.self, options.data == .base64 {
            let (text, after) = try string(at: start)
            guard let data = Data(base64Encoded: text) else { throw decline() }
            end = after
            return cast(data)
        }
        if T.self == URL.self {
            let (text, after) = try string(at: start)
            guard let url = URL(string: text) else { throw decline() }
            end = after
            return cast(url)
        }
        if T.self == UUID.self {
            let (text, after) = try string(at: start)
            guard let uuid = UUID(uuidString: text) else { throw decline() }
            end = after
            return cast(uuid)
        }
        if T.self == [String].self { return cast(try array(at: start, end: &end) { try string(at: $0) }) }
        if T.self == [Int].self { return cast(try array(at: start, end: &end) { try integer(Int.self, at: $0) }) }
        if T.self == [Double].self { return cast(try array(at: start, end: &end) { try double(at: $0) }) }
        if T.self == Decimal.self { let (value, after) = try decimal(at: start); end = after; return cast(value) }
        if options.snakeCase, let dictionary = T.self as? any JSONStringKeyedDecodable.Type {
            let value = try dictionary.init(reader: self, at: start, depth: depth) as! T
            end = self.end(ofValueAt: start)
            return value
        }
        if let key { path.append(key) }
        let value = try T(from: JSONStreamDecoder(reader: self, start: start, depth: depth))
        if key != nil { path.removeLast() }
        end = self.end(ofValueAt: start)
        return value
    }

    /// An array of one scalar type, read without a container.
    private func array<E>(at start: Int, end: inout Int, _ element: (Int) throws -> (E, Int)) throws -> [E] {
        guard at(start) == UInt8(ascii: "[") else { throw decline() }
        var elements: [E] = []
        var index = JSONScanner.skipSpace(text, start + 1)
        while at(index) != UInt8(ascii: "]") {
            let (value, after) = try element(index)
            elements.append(value)
            index = JSONScanner.skipSpace(text, after)
            guard at(index) == UInt8(ascii: ",") else { break }
            index = JSONScanner.skipSpace(text, index + 1)
        }
        guard at(index) == UInt8(ascii: "]") else { throw decline() }
        end = index + 1
        return elements
    }

    func bool(at start: Int) throws -> (Bool, Int) {
        switch at(start) {
        case UInt8(ascii: "t"): return (true, start + 4)
        case UInt8(ascii: "f"): return (false, start + 5)
        default: throw decline()
        }
    }

    func string(at start: Int) throws -> (String, Int) {
        guard at(start) == UInt8(ascii: "\"") else { throw decline() }
        return JSONScanner.readString(text, start)
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type, at start: Int) throws -> (I, Int) {
        guard let result = JSONScanner.readInteger(I.self, text, start) else { throw decline() }
        return result
    }

    func double(at start: Int) throws -> (Double, Int) {
        if let result = JSONScanner.readDouble(text, start) { return result }
        if let value = try nonConforming(at: start) { return value }
        throw decline()
    }

    func float(at start: Int) throws -> (Float, Int) {
        if let end = JSONScanner.validNumber(text, start), let value = Float(String(decoding: UnsafeBufferPointer(rebasing: text[start..<end]), as: UTF8.self)), value.isFinite {
            return (value, end)
        }
        if let (value, end) = try nonConforming(at: start) { return (Float(value), end) }
        throw decline()
    }

    /// A string the non-conforming float strategy names.
    private func nonConforming(at start: Int) throws -> (Double, Int)? {
        guard let strings = options.floatStrings, at(start) == UInt8(ascii: "\"") else { return nil }
        let (text, end) = try string(at: start)
        switch text {
        case strings.positiveInfinity: return (.infinity, end)
        case strings.negativeInfinity: return (-.infinity, end)
        case strings.nan: return (.nan, end)
        default: return nil
        }
    }

    private func date(at start: Int) throws -> (Date, Int)? {
        switch options.date {
        case .deferredToDate:
            let (seconds, end) = try double(at: start)
            return (Date(timeIntervalSinceReferenceDate: seconds), end)
        case .secondsSince1970:
            let (seconds, end) = try double(at: start)
            return (Date(timeIntervalSince1970: seconds), end)
        case .millisecondsSince1970:
            let (milliseconds, end) = try double(at: start)
            return (Date(timeIntervalSince1970: milliseconds / 1000.0), end)
        case .iso8601:
            let (text, end) = try string(at: start)
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else { throw decline() }
            return (date, end)
        }
    }

    /// A number without an exponent, read exactly.
    private func decimal(at start: Int) throws -> (Decimal, Int) {
        guard let end = JSONScanner.validNumber(text, start) else { throw decline() }
        let digits = UnsafeBufferPointer(rebasing: text[start..<end])
        guard !digits.contains(UInt8(ascii: "e")), !digits.contains(UInt8(ascii: "E")),
              let value = Decimal(string: String(decoding: digits, as: UTF8.self), locale: nil) else { throw decline() }
        return (value, end)
    }
}

/// Dictionaries keyed by `String`, read with their keys as they are whatever the key strategy
/// (as Foundation does).
protocol JSONStringKeyedDecodable {
    init(reader: JSONReader, at start: Int, depth: Int) throws
}

extension Dictionary: JSONStringKeyedDecodable where Key == String, Value: Decodable {
    init(reader: JSONReader, at start: Int, depth: Int) throws {
        guard reader.at(start) == UInt8(ascii: "{") else { throw reader.decline() }
        self.init()
        var index = JSONScanner.skipSpace(reader.text, start + 1)
        while reader.at(index) == UInt8(ascii: "\"") {
            let (key, keyEnd) = JSONScanner.readString(reader.text, index)
            let valueStart = JSONScanner.skipSpace(reader.text, JSONScanner.skipSpace(reader.text, keyEnd) + 1)
            var end = valueStart
            let value = try reader.value(Value.self, at: valueStart, key: JSONIndexKey(index: count), depth: depth + 1, end: &end)
            if self[key] == nil { self[key] = value }
            index = reader.next(after: end, open: start)
        }
    }
}
