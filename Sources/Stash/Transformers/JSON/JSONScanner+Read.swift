import Foundation

extension JSONScanner {
    /// The string whose opening quote is at `start` (valid text), unescaped, and the index after it.
    static func readString(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> (String, Int) {
        var index = start + 1
        while index < text.count {
            index = skipPlainASCII(text, index)
            guard index < text.count else { break }
            let byte = text[index]
            if byte == UInt8(ascii: "\"") {
                return (String(decoding: UnsafeBufferPointer(rebasing: text[(start + 1)..<index]), as: UTF8.self), index + 1)
            }
            if byte == UInt8(ascii: "\\") { return readEscapedString(text, start) }
            index += 1
        }
        return ("", text.count)
    }

    private static func readEscapedString(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> (String, Int) {
        var utf8: [UInt8] = []
        var index = start + 1
        while index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: "\"") { break }
            guard byte == UInt8(ascii: "\\"), index + 1 < text.count else {
                utf8.append(byte)
                index += 1
                continue
            }
            let escape = text[index + 1]
            index += 2
            switch escape {
            case UInt8(ascii: "b"): utf8.append(0x08)
            case UInt8(ascii: "f"): utf8.append(0x0C)
            case UInt8(ascii: "n"): utf8.append(0x0A)
            case UInt8(ascii: "r"): utf8.append(0x0D)
            case UInt8(ascii: "t"): utf8.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = hex4(text, index) ?? 0xFFFD
                index += 4
                if scalar >= 0xD800 && scalar <= 0xDBFF, let low = hex4(text, index + 2) {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    index += 6
                }
                utf8.append(contentsOf: String(Unicode.Scalar(scalar).map(Character.init) ?? "\u{FFFD}").utf8)
            default: utf8.append(escape) // " \ /
            }
        }
        return (String(decoding: utf8, as: UTF8.self), index + 1)
    }

    /// Whether the key whose opening quote is at `start` (valid text) spells `name`.
    static func keyMatches(_ text: UnsafeBufferPointer<UInt8>, _ start: Int, _ name: UnsafeBufferPointer<UInt8>) -> Bool {
        let first = start + 1
        if first + name.count < text.count, text[first + name.count] == UInt8(ascii: "\""),
           name.count == 0 || memcmp(text.baseAddress! + first, name.baseAddress!, name.count) == 0 {
            return true
        }
        // The raw bytes differ: only a key with escapes can still be equal.
        let end = skipString(text, start)
        guard UnsafeBufferPointer(rebasing: text[first..<max(first, end - 1)]).contains(UInt8(ascii: "\\")) else { return false }
        return readString(text, start).0.utf8.elementsEqual(name)
    }

    /// An integer written as digits (no fraction or exponent) that fits `I`; nil for anything else,
    /// which Foundation then reads.
    static func readInteger<I: FixedWidthInteger>(_ type: I.Type, _ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> (I, Int)? {
        var index = start
        let negative = index < text.count && text[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        let first = index
        var magnitude: I.Magnitude = 0
        while index < text.count {
            let digit = text[index] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(I.Magnitude(digit))
            guard !overflow1 && !overflow2 else { return nil }
            magnitude = sum
            index += 1
        }
        guard index > first else { return nil }
        if index < text.count {
            let byte = text[index]
            if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { return nil }
        }
        if negative {
            guard I.isSigned else { return magnitude == 0 ? (0, index) : nil }
            guard magnitude <= I.Magnitude(I.max) + 1 else { return nil }
            return (magnitude == I.Magnitude(I.max) + 1 ? I.min : 0 &- I(magnitude), index)
        }
        guard magnitude <= I.Magnitude(I.max) else { return nil }
        return (I(magnitude), index)
    }

    private static let powersOf10: [Double] = (0...22).map { exponent in
        var value = 1.0
        for _ in 0..<exponent { value *= 10 }
        return value
    }

    /// A number as the nearest `Double`: exact arithmetic when the digits and the power of ten are
    /// both exact doubles (Clinger's fast path), the C library's correctly rounded `strtod` otherwise.
    static func readDouble(_ text: UnsafeBufferPointer<UInt8>, _ start: Int) -> (Double, Int)? {
        guard let end = validNumber(text, start) else { return nil }
        var index = start
        let negative = text[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var mantissa: UInt64 = 0
        var exponent = 0
        var exact = true
        var inFraction = false
        while index < end {
            let byte = text[index]
            if byte == UInt8(ascii: ".") { inFraction = true; index += 1; continue }
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            if mantissa < (1 << 53) / 10 {
                mantissa = mantissa * 10 + UInt64(digit)
                if inFraction { exponent -= 1 }
            } else {
                exact = false
                break
            }
            index += 1
        }
        if exact && index < end {
            // An exponent.
            index += 1
            var sign = 1
            if text[index] == UInt8(ascii: "-") { sign = -1; index += 1 } else if text[index] == UInt8(ascii: "+") { index += 1 }
            var value = 0
            while index < end, value < 10_000 {
                value = value * 10 + Int(text[index] - UInt8(ascii: "0"))
                index += 1
            }
            exponent += sign * value
        }
        if exact && exponent >= -22 && exponent <= 22 {
            var value = Double(mantissa)
            value = exponent < 0 ? value / powersOf10[-exponent] : value * powersOf10[exponent]
            return (negative ? -value : value, end)
        }
        guard let value = Double(String(decoding: UnsafeBufferPointer(rebasing: text[start..<end]), as: UTF8.self)), value.isFinite else { return nil }
        return (value, end)
    }
}
