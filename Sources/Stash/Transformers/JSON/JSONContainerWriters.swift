import Foundation

extension JSONWriter {
    /// Starts a member or element of the container `id` at `depth`: closes what its previous member
    /// opened, writes the comma. A container that was closed, or written to while one of its children
    /// still waits for its value, cannot be streamed.
    func begin(_ id: Int, depth: Int) throws {
        guard !fallback, openSlot == 0, frames.count > depth, frames[depth].id == id else {
            fallback = true
            throw JSONFallback()
        }
        if frames.count > depth + 1 { close(above: depth) }
        if frames[depth].count > 0 { byte(UInt8(ascii: ",")) }
        frames[depth].count += 1
    }

    /// Writes `"key":` in the object `id`, converted to snake case if asked; a key the object already
    /// has cannot be streamed (Foundation keeps the last value).
    func key(_ key: some CodingKey, _ id: Int, depth: Int) throws {
        try self.key(named: options.snakeCase ? SnakeCase.fromCamelCase(key.stringValue) : key.stringValue, id, depth: depth)
    }

    func key(named name: String, _ id: Int, depth: Int) throws {
        try begin(id, depth: depth)
        let keyStart = count
        let bits = JSONKeyCache.smallBits(name)
        if let bits, let (written, hash) = keys.find(bits, escapesSlashes: options.escapeSlashes) {
            reserve(written.count + 1)
            (base + count).update(from: written.baseAddress!, count: written.count)
            count += written.count
            try checkUnique(hash, from: keyStart, depth: depth)
        } else {
            var name = name
            name.withUTF8 { escaped($0) }
            let hash = Self.hash(base + keyStart + 1, count - keyStart - 2)
            if let bits {
                keys.keep(bits, escapesSlashes: options.escapeSlashes,
                          written: UnsafeBufferPointer(start: base + keyStart, count: count - keyStart), hash: hash)
            }
            try checkUnique(hash, from: keyStart, depth: depth)
        }
        byte(UInt8(ascii: ":"))
    }

    /// A hash of a key as written (between its quotes), eight bytes at a time.
    @inline(__always) private static func hash(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> UInt64 {
        var hash = 0x9E37_79B9_7F4A_7C15 ^ UInt64(count)
        var index = 0
        while index + 8 <= count {
            hash = (hash ^ UnsafeRawPointer(bytes + index).loadUnaligned(as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            hash ^= hash >> 32
            index += 8
        }
        var tail: UInt64 = 0
        while index < count {
            tail = tail << 8 | UInt64(bytes[index])
            index += 1
        }
        hash = (hash ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        return hash ^ (hash >> 33)
    }

    private func checkUnique(_ hash: UInt64, from keyStart: Int, depth: Int) throws {
        let bit = UInt64(1) << (hash & 63)
        var bits = frames[depth].keyBits
        let word: UInt64
        switch (hash >> 6) & 3 {
        case 0: word = bits.0; bits.0 |= bit
        case 1: word = bits.1; bits.1 |= bit
        case 2: word = bits.2; bits.2 |= bit
        default: word = bits.3; bits.3 |= bit
        }
        frames[depth].keyBits = bits
        if word & bit != 0 && hasKey(from: keyStart, depth: depth) {
            fallback = true
            throw JSONFallback()
        }
    }

    /// Whether the object of the frame at `depth` already holds the key written at `keyStart`: a scan
    /// of our own output, done only when the key's hash bit was already set.
    private func hasKey(from keyStart: Int, depth: Int) -> Bool {
        let key = UnsafeBufferPointer(start: base + keyStart, count: count - keyStart)
        let region = UnsafeBufferPointer(start: base, count: keyStart)
        var position = frames[depth].start + 1
        while position < keyStart {
            let end = JSONScanner.skipString(region, position)
            if end - position == key.count && memcmp(base + position, key.baseAddress!, key.count) == 0 { return true }
            position = JSONScanner.skipValue(region, end + 1) // past the ':'
            position += 1 // past the ','
        }
        return false
    }
}

struct JSONKeyedWriter<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let writer: JSONWriter
    let id: Int
    let depth: Int

    var codingPath: [any CodingKey] { Array(writer.path.prefix(depth)) }

    mutating func encodeNil(forKey key: Key) throws { try writer.key(key, id, depth: depth); writer.null() }
    mutating func encode(_ value: Bool, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: String, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Int, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { try writer.key(key, id, depth: depth); try writer.scalar(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try writer.key(key, id, depth: depth)
        try writer.value(value, key: key, depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        JSONStreamEncoder(writer: writer, slot: nestedSlot(key), depth: depth + 1).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        JSONStreamEncoder(writer: writer, slot: nestedSlot(key), depth: depth + 1).unkeyedContainer()
    }

    /// Writes the key and opens a slot for the nested container's value.
    private func nestedSlot(_ key: Key) -> Int {
        do { try writer.key(key, id, depth: depth) } catch { return -1 }
        let slot = writer.makeID()
        writer.openSlot = slot
        return slot
    }

    mutating func superEncoder() -> any Encoder { writer.fallback = true; return JSONStreamEncoder(writer: writer, slot: -1, depth: depth + 1) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder() }
}

struct JSONUnkeyedWriter: UnkeyedEncodingContainer, JSONScalarEncoding {
    let writer: JSONWriter
    let id: Int
    let depth: Int

    var codingPath: [any CodingKey] { Array(writer.path.prefix(depth)) }
    var count: Int { writer.frames.count > depth && writer.frames[depth].id == id ? writer.frames[depth].count : 0 }

    private func begin() throws { try writer.begin(id, depth: depth) }
    func prepareScalar() throws { try begin() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        try begin()
        try writer.value(value, key: JSONIndexKey(index: writer.frames[depth].count - 1), depth: depth + 1)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        JSONStreamEncoder(writer: writer, slot: nestedSlot(), depth: depth + 1).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        JSONStreamEncoder(writer: writer, slot: nestedSlot(), depth: depth + 1).unkeyedContainer()
    }

    private func nestedSlot() -> Int {
        do { try begin() } catch { return -1 }
        let slot = writer.makeID()
        writer.openSlot = slot
        return slot
    }

    mutating func superEncoder() -> any Encoder { writer.fallback = true; return JSONStreamEncoder(writer: writer, slot: -1, depth: depth + 1) }
}

/// The scalar half of a single-value or unkeyed container: each scalar is written by the writer's
/// `scalar(_:)` once `prepareScalar()` has checked that a value may go here (and written what goes
/// before it).
protocol JSONScalarEncoding {
    var writer: JSONWriter { get }
    func prepareScalar() throws
}

extension JSONScalarEncoding {
    mutating func encodeNil() throws { try prepareScalar(); writer.null() }
    mutating func encode(_ value: Bool) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: String) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Double) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Float) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Int) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Int8) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Int16) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Int32) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: Int64) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: UInt) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: UInt8) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: UInt16) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: UInt32) throws { try prepareScalar(); try writer.scalar(value) }
    mutating func encode(_ value: UInt64) throws { try prepareScalar(); try writer.scalar(value) }
}

extension JSONWriter {
    // The one place each scalar type is written, whatever container it comes through.
    @inline(__always) func null() { ascii("null") }
    @inline(__always) func scalar(_ value: Bool) throws { value ? ascii("true") : ascii("false") }
    @inline(__always) func scalar(_ value: String) throws { string(value) }
    @inline(__always) func scalar(_ value: Double) throws { try finite(float(value)) }
    @inline(__always) func scalar(_ value: Float) throws { try finite(float(value)) }
    @inline(__always) func scalar<I: FixedWidthInteger>(_ value: I) throws { integer(value) }
}
