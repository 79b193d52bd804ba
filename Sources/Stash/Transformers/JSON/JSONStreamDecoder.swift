import Foundation

/// The decoder handed to a value's `init(from:)`: the value at `start`, read in place.
struct JSONStreamDecoder: Decoder, SingleValueDecodingContainer {
    let reader: JSONReader
    let start: Int
    let depth: Int

    var codingPath: [any CodingKey] { Array(reader.path.prefix(depth)) }
    var userInfo: [CodingUserInfoKey: Any] { reader.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard reader.at(start) == UInt8(ascii: "{") else { throw reader.decline() }
        return KeyedDecodingContainer(JSONKeyedReader<Key>(reader: reader, open: start, depth: depth))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard reader.at(start) == UInt8(ascii: "[") else { throw reader.decline() }
        return JSONUnkeyedReader(reader: reader, open: start, depth: depth)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { reader.at(start) == UInt8(ascii: "n") }
    func decode(_ type: Bool.Type) throws -> Bool { try reader.bool(at: start).0 }
    func decode(_ type: String.Type) throws -> String { try reader.string(at: start).0 }
    func decode(_ type: Double.Type) throws -> Double { try reader.double(at: start).0 }
    func decode(_ type: Float.Type) throws -> Float { try reader.float(at: start).0 }
    func decode(_ type: Int.Type) throws -> Int { try reader.integer(type, at: start).0 }
    func decode(_ type: Int8.Type) throws -> Int8 { try reader.integer(type, at: start).0 }
    func decode(_ type: Int16.Type) throws -> Int16 { try reader.integer(type, at: start).0 }
    func decode(_ type: Int32.Type) throws -> Int32 { try reader.integer(type, at: start).0 }
    func decode(_ type: Int64.Type) throws -> Int64 { try reader.integer(type, at: start).0 }
    func decode(_ type: UInt.Type) throws -> UInt { try reader.integer(type, at: start).0 }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try reader.integer(type, at: start).0 }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try reader.integer(type, at: start).0 }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try reader.integer(type, at: start).0 }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try reader.integer(type, at: start).0 }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        var end = start
        return try reader.value(type, at: start, key: nil, depth: depth, end: &end)
    }
}

/// An object read with a cursor: the key asked for is first looked for where the last one ended
/// (synthesized code asks in declaration order, which is the order we and Foundation's key order on
/// Apple platforms write), then by a scan of the object.
final class JSONKeyedReader<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let reader: JSONReader
    let open: Int
    let depth: Int
    /// The next member's opening quote, or the closing `}`.
    @exclusivity(unchecked) private var cursor: Int
    /// Every member before the cursor was taken by a key asked for, in order.
    @exclusivity(unchecked) private var inOrder = true
    /// One bit per key name asked for (see ``isFirst(_:)``).
    @exclusivity(unchecked) private var asked: UInt64 = 0
    /// The object's keys are known to be distinct.
    @exclusivity(unchecked) private var unique = false

    init(reader: JSONReader, open: Int, depth: Int) {
        self.reader = reader
        self.open = open
        self.depth = depth
        cursor = reader.next(after: open + 1, open: open)
    }

    var codingPath: [any CodingKey] { Array(reader.path.prefix(depth)) }

    var allKeys: [Key] {
        var keys: [Key] = []
        forEachMember { keyStart, _ in
            let name = JSONScanner.readString(reader.text, keyStart).0
            if let key = Key(stringValue: reader.options.snakeCase ? SnakeCase.toCamelCase(name) : name) { keys.append(key) }
            return false
        }
        return keys
    }

    /// Calls `body` with each member's key quote and value start until it returns true, from the
    /// member at `from` (the cursor: the key asked for is most likely after it) to the end, then from
    /// the first member up to `from`.
    private func forEachMember(from: Int? = nil, _ body: (Int, Int) -> Bool) {
        let first = JSONScanner.skipSpace(reader.text, open + 1)
        let start = from ?? first
        if scanMembers(from: start, to: -1, body) || start == first { return }
        _ = scanMembers(from: first, to: start, body)
    }

    private func scanMembers(from start: Int, to stop: Int, _ body: (Int, Int) -> Bool) -> Bool {
        let text = reader.text
        var index = start
        while index != stop && reader.at(index) == UInt8(ascii: "\"") {
            let valueStart = JSONScanner.skipSpace(text, JSONScanner.skipSpace(text, JSONScanner.skipString(text, index)) + 1)
            if body(index, valueStart) { return true }
            index = JSONScanner.skipSpace(text, JSONScanner.skipValue(text, valueStart))
            if reader.at(index) == UInt8(ascii: ",") { index = JSONScanner.skipSpace(text, index + 1) }
        }
        return false
    }

    /// The start of the value of `key`, or nil when the object has no such member. With a key
    /// repeated in the object, Foundation takes the first member, which a cursor or a scan from it can
    /// miss: see ``isFirst(_:)``.
    private func find(_ key: Key) throws -> Int? {
        var name = key.stringValue
        return try name.withUTF8 { utf8 -> Int? in
            let text = reader.text
            if reader.options.snakeCase {
                var found: Int?
                forEachMember { keyStart, valueStart in
                    guard SnakeCase.toCamelCase(JSONScanner.readString(text, keyStart).0).utf8.elementsEqual(utf8) else { return false }
                    found = valueStart
                    return true
                }
                // Foundation may match keys in ways we do not: it decides when we find nothing.
                if found == nil { reader.fallback = true }
                return found
            }
            var found: Int?
            if reader.at(cursor) == UInt8(ascii: "\""), JSONScanner.keyMatches(text, cursor, utf8) {
                found = cursor
            } else {
                forEachMember(from: cursor) { keyStart, _ in
                    guard JSONScanner.keyMatches(text, keyStart, utf8) else { return false }
                    found = keyStart
                    return true
                }
            }
            guard let keyStart = found else { return nil }
            try isFirst(utf8)
            // Members between the cursor and a member found further on are not consumed.
            if keyStart != cursor { inOrder = false }
            return JSONScanner.skipSpace(text, JSONScanner.skipSpace(text, JSONScanner.skipString(text, keyStart)) + 1)
        }
    }

    /// Checks that the member just found for `name` is the object's first of that name (the one
    /// Foundation reads). While every member before the cursor was taken, in order, by a key asked for
    /// (`inOrder`), an earlier member of the same name means the name was asked for before: a bit per
    /// name asked (by length and end bytes) rules that out at no cost. Otherwise the object's keys are
    /// compared once; if one repeats, Foundation decodes the value.
    private func isFirst(_ name: UnsafeBufferPointer<UInt8>) throws {
        guard !unique else { return }
        let hash = UInt64(name.count) &* 31 &+ UInt64(name.first ?? 0) &* 7 &+ UInt64(name.last ?? 0)
        let bit = UInt64(1) << (hash & 63)
        defer { asked |= bit }
        if inOrder && asked & bit == 0 { return }
        var names = Set<String>()
        var repeated = false
        forEachMember { keyStart, _ in
            repeated = !names.insert(JSONScanner.readString(reader.text, keyStart).0).inserted
            return repeated
        }
        if repeated { throw reader.decline() }
        unique = true
    }

    private func advance(to end: Int) { cursor = reader.next(after: end, open: open) }

    func contains(_ key: Key) -> Bool { (try? find(key)) != nil }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let start = try find(key) else { throw reader.decline() }
        guard reader.at(start) == UInt8(ascii: "n") else { return false }
        advance(to: start + 4)
        return true
    }

    private func read<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T {
        guard let start = try find(key) else { throw reader.decline() }
        var end = start
        let value = try reader.value(type, at: start, key: key, depth: depth + 1, end: &end)
        advance(to: end)
        return value
    }

    private func readIfPresent<T: Decodable>(_ type: T.Type, _ key: Key) throws -> T? {
        guard let start = try find(key) else { return nil }
        if reader.at(start) == UInt8(ascii: "n") {
            advance(to: start + 4)
            return nil
        }
        var end = start
        let value = try reader.value(type, at: start, key: key, depth: depth + 1, end: &end)
        advance(to: end)
        return value
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        guard let start = try find(key) else { throw reader.decline() }
        let (value, end) = try reader.bool(at: start)
        advance(to: end)
        return value
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        guard let start = try find(key) else { throw reader.decline() }
        let (value, end) = try reader.string(at: start)
        advance(to: end)
        return value
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        guard let start = try find(key) else { throw reader.decline() }
        let (value, end) = try reader.double(at: start)
        advance(to: end)
        return value
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
        guard let start = try find(key) else { throw reader.decline() }
        let (value, end) = try reader.integer(Int.self, at: start)
        advance(to: end)
        return value
    }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try read(type, key) }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try readIfPresent(type, key) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try readIfPresent(type, key) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try readIfPresent(type, key) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        guard let start = try find(key) else { throw reader.decline() }
        reader.path.append(key)
        defer { reader.path.removeLast() }
        let container = try JSONStreamDecoder(reader: reader, start: start, depth: depth + 1).container(keyedBy: type)
        advance(to: JSONScanner.skipValue(reader.text, start))
        return container
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard let start = try find(key) else { throw reader.decline() }
        let container = try JSONStreamDecoder(reader: reader, start: start, depth: depth + 1).unkeyedContainer()
        advance(to: JSONScanner.skipValue(reader.text, start))
        return container
    }

    func superDecoder() throws -> any Decoder { throw reader.decline() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw reader.decline() }
}

/// An array read with a cursor.
final class JSONUnkeyedReader: UnkeyedDecodingContainer {
    let reader: JSONReader
    let open: Int
    let depth: Int
    @exclusivity(unchecked) private var cursor: Int
    @exclusivity(unchecked) private(set) var currentIndex = 0

    init(reader: JSONReader, open: Int, depth: Int) {
        self.reader = reader
        self.open = open
        self.depth = depth
        cursor = reader.next(after: open + 1, open: open)
    }

    var codingPath: [any CodingKey] { Array(reader.path.prefix(depth)) }

    var count: Int? {
        let text = reader.text
        var elements = 0
        var index = JSONScanner.skipSpace(text, open + 1)
        while index < text.count && text[index] != UInt8(ascii: "]") {
            elements += 1
            index = JSONScanner.skipSpace(text, JSONScanner.skipValue(text, index))
            if reader.at(index) == UInt8(ascii: ",") { index = JSONScanner.skipSpace(text, index + 1) } else { break }
        }
        return elements
    }

    var isAtEnd: Bool { reader.at(cursor) == UInt8(ascii: "]") || cursor >= reader.text.count }

    private func advance(to end: Int) {
        cursor = reader.next(after: end, open: open)
        currentIndex += 1
    }

    func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw reader.decline() }
        guard reader.at(cursor) == UInt8(ascii: "n") else { return false }
        advance(to: cursor + 4)
        return true
    }

    private func read<T: Decodable>(_ type: T.Type) throws -> T {
        guard !isAtEnd else { throw reader.decline() }
        var end = cursor
        let value = try reader.value(type, at: cursor, key: JSONIndexKey(index: currentIndex), depth: depth + 1, end: &end)
        advance(to: end)
        return value
    }

    func decode(_ type: Bool.Type) throws -> Bool { try read(type) }
    func decode(_ type: String.Type) throws -> String { try read(type) }
    func decode(_ type: Double.Type) throws -> Double { try read(type) }
    func decode(_ type: Float.Type) throws -> Float { try read(type) }
    func decode(_ type: Int.Type) throws -> Int { try read(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try read(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try read(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try read(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try read(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try read(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try read(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try read(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try read(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try read(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try read(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        guard !isAtEnd else { throw reader.decline() }
        let container = try JSONStreamDecoder(reader: reader, start: cursor, depth: depth + 1).container(keyedBy: type)
        advance(to: JSONScanner.skipValue(reader.text, cursor))
        return container
    }

    func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard !isAtEnd else { throw reader.decline() }
        let container = try JSONStreamDecoder(reader: reader, start: cursor, depth: depth + 1).unkeyedContainer()
        advance(to: JSONScanner.skipValue(reader.text, cursor))
        return container
    }

    func superDecoder() throws -> any Decoder { throw reader.decline() }
}
