import Foundation

/// The output of one encoding: a growable buffer that becomes the returned `Data` without a copy, and
/// the stack of containers still open in it.
///
/// Values are written as they come, so a container must be finished before its parent writes again.
/// Code that breaks this (a container written to after its parent moved on, a second value through one
/// single-value container, `superEncoder`, a key written twice) sets ``fallback``, and the whole value
/// is encoded again by Foundation: the streaming path never writes bytes Foundation would not.
final class JSONWriter {
    struct Frame {
        var id: Int
        var slot: Int
        var isObject: Bool
        var count = 0
        /// Offset of the `{` or `[`.
        var start: Int
        /// One bit per hash of a key written, so a key written twice is found without a list of keys.
        var keyBits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    }

    @exclusivity(unchecked) private(set) var base: UnsafeMutablePointer<UInt8>
    @exclusivity(unchecked) var count = 0
    @exclusivity(unchecked) private(set) var capacity: Int
    @exclusivity(unchecked) var options: JSONCoderOptions
    @exclusivity(unchecked) var userInfo: [CodingUserInfoKey: Any]
    @exclusivity(unchecked) var frames: [Frame] = []
    /// The slot whose value goes at the end of the buffer next; 0: none.
    @exclusivity(unchecked) var openSlot = 0
    @exclusivity(unchecked) private var nextID = 1
    /// Set when the value cannot be streamed: Foundation encodes it instead.
    @exclusivity(unchecked) var fallback = false
    /// The keys of the nested values being written, for `codingPath`.
    @exclusivity(unchecked) var path: [any CodingKey] = []
    /// The keys written so far (by this thread, while the writer is reused).
    @exclusivity(unchecked) var keys = JSONKeyCache()

    init(options: JSONCoderOptions, userInfo: [CodingUserInfoKey: Any], capacity: Int = 512) {
        self.options = options
        self.userInfo = userInfo
        self.capacity = capacity
        base = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        frames.reserveCapacity(8)
    }

    deinit {
        base.deallocate()
        keys.deallocate()
    }

    /// Forgets the last encoding, keeping the allocations. Ids keep counting: one from an earlier
    /// encoding never names a container of the next.
    func reset() {
        count = 0
        if !frames.isEmpty { frames.removeAll(keepingCapacity: true) }
        if !path.isEmpty { path.removeAll(keepingCapacity: true) }
        openSlot = 0
        fallback = false
        userInfo = [:]
    }

    func makeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// The bytes written, as `Data` that owns a copy of exactly that length.
    func data() -> Data { Data(bytes: base, count: count) }

    // MARK: Bytes

    @inline(__always) func reserve(_ extra: Int) {
        if count + extra > capacity { grow(count + extra) }
    }

    private func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let new = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        new.update(from: base, count: count)
        base.deallocate()
        base = new
        capacity = newCapacity
    }

    @inline(__always) func byte(_ value: UInt8) {
        reserve(1)
        base[count] = value
        count += 1
    }

    func bytes(_ raw: UnsafeBufferPointer<UInt8>) {
        reserve(raw.count)
        if let start = raw.baseAddress { (base + count).update(from: start, count: raw.count) }
        count += raw.count
    }

    func ascii(_ text: StaticString) {
        bytes(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Closes the containers above `depth` (their writers are done: a parent only writes again once
    /// its child has finished).
    func close(above depth: Int) {
        while frames.count > depth + 1 {
            byte(frames.removeLast().isObject ? UInt8(ascii: "}") : UInt8(ascii: "]"))
        }
    }

    // MARK: Scalars

    @inline(__always) func integer<I: FixedWidthInteger>(_ value: I) {
        if I.isSigned {
            integer(Int64(value))
        } else {
            unsigned(UInt64(value))
        }
    }

    func integer(_ value: Int64) {
        if value < 0 {
            byte(UInt8(ascii: "-"))
        }
        unsigned(value.magnitude)
    }

    func unsigned(_ value: UInt64) {
        reserve(20)
        if value == 0 {
            base[count] = UInt8(ascii: "0")
            count += 1
            return
        }
        var magnitude = value
        var digits = 0
        var probe = magnitude
        while probe > 0 { probe /= 10; digits += 1 }
        var index = count + digits - 1
        while magnitude > 0 {
            let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
            base[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: remainder)
            index -= 1
            magnitude = quotient
        }
        count += digits
    }

    /// A float as Foundation writes it: Swift's shortest round-trip `description`, less a trailing
    /// `.0`; a non-finite value as the strategy's string, or `false` when it has none.
    func float(_ value: Float) -> Bool { floatingPoint(value) }
    func float(_ value: Double) -> Bool { floatingPoint(value) }

    @inline(__always) private func floatingPoint<F: BinaryFloatingPoint & TextOutputStreamable>(_ value: F) -> Bool {
        guard value.isFinite else {
            guard let strings = options.floatStrings else { return false }
            string(value.isNaN ? strings.nan : value < 0 ? strings.negativeInfinity : strings.positiveInfinity)
            return true
        }
        // Integers below 2^53 print as digits: skip `description`'s String.
        if value == value.rounded(.towardZero), value.magnitude < 9_007_199_254_740_992, !(value == 0 && value.sign == .minus) {
            integer(Int64(value))
            return true
        }
        // `description`'s text (Swift's shortest round-trip digits), streamed into the buffer: the
        // standard library hands its ASCII bytes to `_writeASCII` without making a `String`.
        let start = count
        var stream = Stream(writer: self)
        value.write(to: &stream)
        if count - start > 2 && base[count - 2] == UInt8(ascii: ".") && base[count - 1] == UInt8(ascii: "0") {
            count -= 2
        }
        return true
    }

    /// A `TextOutputStream` that appends to the writer's buffer.
    private struct Stream: TextOutputStream {
        unowned(unsafe) let writer: JSONWriter

        mutating func write(_ string: String) {
            var string = string
            string.withUTF8 { writer.bytes($0) }
        }

        mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) { writer.bytes(buffer) }
    }

    /// A string with Foundation's escapes: `"`, `\`, `/` (unless `.withoutEscapingSlashes`), the short
    /// forms of control characters and `\u00xx` for the others.
    func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in escaped(utf8) }
    }

    func escaped(_ utf8: UnsafeBufferPointer<UInt8>) {
        // Eight bytes of room past the string: words are copied whole (see `copyPlain`).
        reserve(utf8.count + 10)
        base[count] = UInt8(ascii: "\"")
        guard let source = utf8.baseAddress else {
            base[count + 1] = UInt8(ascii: "\"")
            count += 2
            return
        }
        let slash = options.escapeSlashes ? UInt8(ascii: "/") : UInt8(ascii: "\"")
        // Most strings need no escape: one pass finds that and copies them.
        let first = Self.copyPlain(source, utf8.count, to: base + count + 1, slash)
        count += 1 + first
        guard first < utf8.count else {
            base[count] = UInt8(ascii: "\"")
            count += 1
            return
        }
        var runStart = first
        var index = first
        while index < utf8.count {
            // Eight bytes at a time while none of them needs an escape.
            while index + 8 <= utf8.count && !Self.needsEscape(UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self), slash) {
                index += 8
            }
            guard index < utf8.count else { break }
            let unit = source[index]
            index += 1
            guard unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") || unit == slash else { continue }
            if index - 1 > runStart { bytes(UnsafeBufferPointer(start: source + runStart, count: index - 1 - runStart)) }
            runStart = index
            switch unit {
            case UInt8(ascii: "\""): ascii("\\\"")
            case UInt8(ascii: "\\"): ascii("\\\\")
            case UInt8(ascii: "/"): ascii("\\/")
            case 0x08: ascii("\\b")
            case 0x0C: ascii("\\f")
            case 0x0A: ascii("\\n")
            case 0x0D: ascii("\\r")
            case 0x09: ascii("\\t")
            default:
                let hex: StaticString = "0123456789abcdef"
                ascii("\\u00")
                byte(hex.utf8Start[Int(unit >> 4)])
                byte(hex.utf8Start[Int(unit & 0xF)])
            }
        }
        if utf8.count > runStart { bytes(UnsafeBufferPointer(start: source + runStart, count: utf8.count - runStart)) }
        byte(UInt8(ascii: "\""))
    }

    /// Copies `source` to `destination` up to its first byte that needs an escape, and returns that
    /// byte's index (`count` when none does). Eight bytes at a time, whole words stored: the caller
    /// leaves eight bytes of room past `count` (the lowest byte ``escapeFlags(_:_:)`` flags is exact).
    @inline(__always) private static func copyPlain(_ source: UnsafePointer<UInt8>, _ count: Int,
                                                    to destination: UnsafeMutablePointer<UInt8>, _ slash: UInt8) -> Int {
        var index = 0
        while index + 8 <= count {
            let word = UnsafeRawPointer(source + index).loadUnaligned(as: UInt64.self)
            UnsafeMutableRawPointer(destination + index).storeBytes(of: word, as: UInt64.self)
            let flags = escapeFlags(UInt64(littleEndian: word), slash)
            if flags != 0 { return index + flags.trailingZeroBitCount / 8 }
            index += 8
        }
        guard index < count else { return count }
        // The last bytes, in a word padded with spaces (which need no escape).
        var tail: UInt64 = 0x2020_2020_2020_2020
        var last = count - 1
        while last >= index {
            // From the end: each byte pushes a space out of the top.
            tail = tail &<< 8 | UInt64(source[last])
            last -= 1
        }
        UnsafeMutableRawPointer(destination + index).storeBytes(of: UInt64(littleEndian: tail), as: UInt64.self)
        let flags = escapeFlags(tail, slash)
        return flags != 0 ? index + flags.trailingZeroBitCount / 8 : count
    }

    /// Whether any of the eight bytes of `word` is a control character, `"`, `\` or `slash` (it may
    /// say yes for a byte above one that is: the caller then looks byte by byte).
    @inline(__always) private static func needsEscape(_ word: UInt64, _ slash: UInt8) -> Bool {
        escapeFlags(word, slash) != 0
    }

    /// The high bit of each byte of `word` that needs an escape; a borrow may also flag a byte above
    /// one that does, never one below.
    @inline(__always) private static func escapeFlags(_ word: UInt64, _ slash: UInt8) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        @inline(__always) func hasZero(_ x: UInt64) -> UInt64 { (x &- ones) & ~x & highs }
        let control = (word &- 0x2020_2020_2020_2020) & ~word & highs
        return control | hasZero(word ^ (ones &* 0x22)) | hasZero(word ^ (ones &* 0x5C)) | hasZero(word ^ (ones &* UInt64(slash)))
    }
}
