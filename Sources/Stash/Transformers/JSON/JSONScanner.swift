import Foundation

/// The byte-level reading of JSON text: one validating pass over the whole input (so the decoder
/// accepts exactly what it can prove Foundation accepts), then unchecked skips and reads over text
/// that is known to be valid. Nothing here allocates except the strings it returns.
enum JSONScanner {
    /// Deeper input is left to Foundation (which allows 512 levels).
    static let maxDepth = 500

    @inline(__always) static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    @inline(__always) static func skipSpace(_ text: UnsafeBufferPointer<UInt8>, _ index: Int) -> Int {
        var index = index
        while index < text.count && isSpace(text[index]) { index += 1 }
        return index
    }

    // MARK: Validation

    /// Whether `text` is one JSON value with optional white space around it: strict RFC 8259 grammar,
    /// valid UTF-8, no unescaped control characters, no lone surrogate escapes, at most ``maxDepth``
    /// levels. Iterative: any input takes linear time and constant stack.
    static func validate(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        withUnsafeTemporaryAllocation(of: Bool.self, capacity: maxDepth + 1) { isObject in
            var index = skipSpace(text, 0)
            var depth = 0
            value: while true {
                guard index < text.count else { return false }
                switch text[index] {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    // A container: an empty one closes at once; an object's first member starts with its key.
                    guard depth < maxDepth else { return false }
                    let object = text[index] == UInt8(ascii: "{")
                    depth += 1
                    isObject[depth] = object
                    index = skipSpace(text, index + 1)
                    if index < text.count && text[index] == (object ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        depth -= 1
                        index += 1
                    } else {
                        if object {
                            guard let next = member(text, index) else { return false }
                            index = next
                        }
                        continue value
                    }
                case UInt8(ascii: "\""):
                    guard let end = validString(text, index) else { return false }
                    index = end
                case UInt8(ascii: "t"): guard let end = literal(text, index, "true") else { return false }; index = end
                case UInt8(ascii: "f"): guard let end = literal(text, index, "false") else { return false }; index = end
                case UInt8(ascii: "n"): guard let end = literal(text, index, "null") else { return false }; index = end
                default:
                    guard let end = validNumber(text, index) else { return false }
                    index = end
                }
                // After a value: close containers, or go on to the next member or element.
                while true {
                    index = skipSpace(text, index)
                    if depth == 0 { return index == text.count }
                    guard index < text.count else { return false }
                    let byte = text[index]
                    if byte == UInt8(ascii: ",") {
                        index = skipSpace(text, index + 1)
                        if isObject[depth] {
                            guard let next = member(text, index) else { return false }
                            index = next
                        }
                        continue value
                    }
                    guard byte == (isObject[depth] ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return false }
                    depth -= 1
                    index += 1
                }
            }
        }
    }

    /// A member's `"key" :` and the white space after it; the index of its value.
    private static func member(_ text: UnsafeBufferPointer<UInt8>, _ index: Int) -> Int? {
        guard index < text.count, text[index] == UInt8(ascii: "\""), let end = validString(text, index) else { return nil }
        let colon = skipSpace(text, end)
        guard colon < text.count, text[colon] == UInt8(ascii: ":") else { return nil }
        return skipSpace(text, colon + 1)
    }

    private static func literal(_ text: UnsafeBufferPointer<UInt8>, _ index: Int, _ word: StaticString) -> Int? {
        let count = word.utf8CodeUnitCount
        guard index + count <= text.count else { return nil }
        for offset in 0..<count where text[index + offset] != word.utf8Start[offset] { return nil }
        return index + count
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`; the index after it.
    static func validNumber(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var index = start
        func digits() -> Bool {
            let first = index
            while index < text.count && text[index] &- UInt8(ascii: "0") < 10 { index += 1 }
            return index > first
        }
        if index < text.count && text[index] == UInt8(ascii: "-") { index += 1 }
        guard index < text.count else { return nil }
        if text[index] == UInt8(ascii: "0") {
            index += 1
        } else if !digits() {
            return nil
        }
        if index < text.count && text[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() else { return nil }
        }
        if index < text.count && (text[index] == UInt8(ascii: "e") || text[index] == UInt8(ascii: "E")) {
            index += 1
            if index < text.count && (text[index] == UInt8(ascii: "+") || text[index] == UInt8(ascii: "-")) { index += 1 }
            guard digits() else { return nil }
        }
        return index
    }

    /// A string starting at the quote at `start`; the index after its closing quote.
    static func validString(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int? {
        var index = start + 1
        while index < text.count {
            index = skipPlainASCII(text, index)
            guard index < text.count else { break }
            let byte = text[index]
            if byte == UInt8(ascii: "\"") { return index + 1 }
            if byte < 0x20 { return nil }
            if byte == UInt8(ascii: "\\") {
                guard index + 1 < text.count else { return nil }
                switch text[index + 1] {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    index += 2
                case UInt8(ascii: "u"):
                    guard let unit = hex4(text, index + 2) else { return nil }
                    index += 6
                    if unit >= 0xDC00 && unit <= 0xDFFF { return nil }
                    if unit >= 0xD800 && unit <= 0xDBFF {
                        guard index + 1 < text.count, text[index] == UInt8(ascii: "\\"), text[index + 1] == UInt8(ascii: "u"),
                              let low = hex4(text, index + 2), low >= 0xDC00 && low <= 0xDFFF else { return nil }
                        index += 6
                    }
                default: return nil
                }
            } else if byte < 0x80 {
                index += 1
            } else {
                guard let next = utf8Scalar(text, index) else { return nil }
                index = next
            }
        }
        return nil
    }

    static func hex4(_ text: UnsafeBufferPointer<UInt8>, _ index: Int) -> UInt32? {
        guard index + 4 <= text.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = text[index + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// One multi-byte UTF-8 scalar (no overlong forms, surrogates or values past U+10FFFF).
    private static func utf8Scalar(_ text: UnsafeBufferPointer<UInt8>, _ index: Int) -> Int? {
        let lead = text[index]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: return nil
        }
        guard index + length <= text.count else { return nil }
        let second = text[index + 1]
        guard second >= low && second <= high else { return nil }
        for offset in 2..<max(2, length) where text[index + offset] & 0xC0 != 0x80 { return nil }
        return index + length
    }

    /// The index of the first byte at or after `index` that is not printable ASCII, or is `"` or `\\`
    /// (or of the first of the last seven bytes, when none is before them): the stretch of a string
    /// with nothing to look at, eight bytes at a time.
    @inline(__always) static func skipPlainASCII(_ text: UnsafeBufferPointer<UInt8>, _ index: Int) -> Int {
        guard let base = text.baseAddress else { return index }
        var index = index
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        while index + 8 <= text.count {
            // Byte 0 of the text is the word's lowest byte.
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            // The high bit of each byte that is below 0x20 or above 0x7F, a quote or a backslash. A
            // borrow can also flag a byte above one of these, never below: the lowest flag is exact.
            let control = (word &- 0x2020_2020_2020_2020) | word
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let flags = (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highs
            if flags != 0 { return index + flags.trailingZeroBitCount / 8 }
            index += 8
        }
        return index
    }

    // MARK: Skipping valid text

    /// The index after the string whose opening quote is at `start` (text known to be valid).
    static func skipString(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        var index = start + 1
        while index < text.count {
            index = skipPlainASCII(text, index)
            guard index < text.count else { break }
            let byte = text[index]
            if byte == UInt8(ascii: "\"") { return index + 1 }
            index += byte == UInt8(ascii: "\\") ? 2 : 1
        }
        return text.count
    }

    /// The index after the value starting at `start` (text known to be valid).
    static func skipValue(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> Int {
        guard start < text.count else { return text.count }
        switch text[start] {
        case UInt8(ascii: "\""): return skipString(text, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < text.count {
                switch text[index] {
                case UInt8(ascii: "\""): index = skipString(text, index); continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return text.count
        default:
            var index = start
            while index < text.count {
                let byte = text[index]
                if byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") || isSpace(byte) { break }
                index += 1
            }
            return index
        }
    }
}
