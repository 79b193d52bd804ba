import Foundation

/// Thrown inside the streaming encoder or decoder when a value needs Foundation's coder; never seen
/// by callers.
struct JSONFallback: Error {}

/// The index key of an unkeyed container's element, for `codingPath`.
struct JSONIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(index: Int) { intValue = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}

/// Dictionaries keyed by `String`: Foundation writes and reads their keys as they are, whatever the
/// key strategy.
protocol JSONStringKeyedDictionary {
    func encodeEntries(to writer: JSONWriter, id: Int, depth: Int) throws
}

extension Dictionary: JSONStringKeyedDictionary where Key == String, Value: Encodable {
    func encodeEntries(to writer: JSONWriter, id: Int, depth: Int) throws {
        for (key, value) in self {
            try writer.key(named: key, id, depth: depth)
            try writer.value(value, key: JSONIndexKey(index: 0), depth: depth + 1)
        }
    }
}

/// The encoder handed to a value's `encode(to:)`: one slot in the output, at one depth of nesting.
struct JSONStreamEncoder: Encoder, SingleValueEncodingContainer, JSONScalarEncoding {
    let writer: JSONWriter
    let slot: Int
    let depth: Int

    var codingPath: [any CodingKey] { Array(writer.path.prefix(depth)) }
    var userInfo: [CodingUserInfoKey: Any] { writer.userInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(JSONKeyedWriter<Key>(writer: writer, id: open(object: true), depth: depth))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        JSONUnkeyedWriter(writer: writer, id: open(object: false), depth: depth)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    /// Opens this slot's container, or finds it open (a second request for the same kind); any other
    /// order cannot be streamed.
    func open(object: Bool) -> Int {
        if writer.openSlot == slot && writer.frames.count == depth {
            let id = writer.makeID()
            writer.frames.append(.init(id: id, slot: slot, isObject: object, start: writer.count))
            writer.byte(object ? UInt8(ascii: "{") : UInt8(ascii: "["))
            writer.openSlot = 0
            return id
        }
        if writer.frames.count > depth, writer.frames[depth].slot == slot, writer.frames[depth].isObject == object {
            return writer.frames[depth].id
        }
        writer.fallback = true
        return -1
    }

    /// Checks that this slot is where the next value goes, and fills it.
    func prepareScalar() throws { try claim() }

    private func claim() throws {
        guard !writer.fallback, writer.openSlot == slot else {
            writer.fallback = true
            throw JSONFallback()
        }
        writer.openSlot = 0
    }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try claim()
        writer.openSlot = slot
        try writer.value(value, key: nil, depth: depth, slot: slot)
    }
}

extension JSONWriter {
    /// A non-finite float under `.throw`: Foundation's coder writes the error, with its coding path.
    func finite(_ written: Bool) throws {
        if !written {
            fallback = true
            throw JSONFallback()
        }
    }

    /// Writes a value at the end of the buffer: the types Foundation special-cases and common ones
    /// directly, anything else through its `encode(to:)` in a new slot (or `slot`, when a single-value
    /// container passes its own value on).
    func value<T: Encodable>(_ value: T, key: (any CodingKey)?, depth: Int, slot: Int = 0) throws {
        if T.self == String.self { openSlot = 0; return try scalar(cast(value, to: String.self)) }
        if T.self == Int.self { openSlot = 0; return try scalar(cast(value, to: Int.self)) }
        if T.self == Double.self { openSlot = 0; return try scalar(cast(value, to: Double.self)) }
        if T.self == Bool.self { openSlot = 0; return try scalar(cast(value, to: Bool.self)) }
        if T.self == [String].self { openSlot = 0; return try array(cast(value, to: [String].self)) }
        if T.self == [Int].self { openSlot = 0; return try array(cast(value, to: [Int].self)) }
        if T.self == [Double].self { openSlot = 0; return try array(cast(value, to: [Double].self)) }
        if T.self == Date.self { openSlot = 0; return try date(cast(value)) }
        if T.self == Data.self { openSlot = 0; return try data(cast(value), depth: depth) }
        if T.self == URL.self { openSlot = 0; return string(cast(value, to: URL.self).absoluteString) }
        if T.self == UUID.self { openSlot = 0; return string(cast(value, to: UUID.self).uuidString) }
        if T.self == Decimal.self {
            let decimal: Decimal = cast(value)
            guard !decimal.isNaN else { fallback = true; throw JSONFallback() }
            openSlot = 0
            return string(decimal.description, quoted: false)
        }
        let mySlot = slot == 0 ? makeID() : slot
        openSlot = mySlot
        if options.snakeCase, let dictionary = value as? any JSONStringKeyedDictionary {
            let id = JSONStreamEncoder(writer: self, slot: mySlot, depth: depth).open(object: true)
            return try dictionary.encodeEntries(to: self, id: id, depth: depth)
        }
        if let key { path.append(key) }
        try value.encode(to: JSONStreamEncoder(writer: self, slot: mySlot, depth: depth))
        if key != nil { path.removeLast() }
        if openSlot == mySlot {
            // Nothing encoded: Foundation writes an empty object.
            openSlot = 0
            ascii("{}")
        }
    }

    /// An array of one scalar type, written without a container.
    private func array<E>(_ elements: [E]) throws {
        byte(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { byte(UInt8(ascii: ",")) }
            if E.self == String.self { try scalar(cast(element, to: String.self)) }
            else if E.self == Int.self { try scalar(cast(element, to: Int.self)) }
            else { try scalar(cast(element, to: Double.self)) }
        }
        byte(UInt8(ascii: "]"))
    }

    func string(_ value: String, quoted: Bool) {
        var value = value
        value.withUTF8 { bytes($0) }
    }

    private func date(_ date: Date) throws {
        switch options.date {
        case .deferredToDate: try finite(float(date.timeIntervalSinceReferenceDate))
        case .secondsSince1970: try finite(float(date.timeIntervalSince1970))
        case .millisecondsSince1970: try finite(float(1000.0 * date.timeIntervalSince1970))
        case .iso8601: string(Date.ISO8601FormatStyle().format(date))
        }
    }

    private func data(_ data: Data, depth: Int) throws {
        switch options.data {
        case .base64: string(data.base64EncodedString())
        case .deferredToData:
            byte(UInt8(ascii: "["))
            for (index, byte) in data.enumerated() {
                if index > 0 { self.byte(UInt8(ascii: ",")) }
                integer(byte)
            }
            byte(UInt8(ascii: "]"))
        }
    }
}

/// Reinterprets a value whose type was just compared equal to `U`.
@inline(__always) func cast<T, U>(_ value: T, to type: U.Type = U.self) -> U {
    unsafeBitCast(value, to: U.self)
}
