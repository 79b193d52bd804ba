/// Punycode (RFC 3492) decoding, for the `xn--` labels of internationalised host names: cache keys
/// spell a host the same whether a URL carries it in Unicode or in IDNA's ASCII form (``URLNormalizer``).
/// Decoding only; no IDNA mapping (the labels a URL carries are already mapped).
enum Punycode {
    private static let (base, tMin, tMax, skew, damp, initialBias, initialN) = (36, 1, 26, 38, 700, 72, 128)

    /// The Unicode label that `encoded` (without its `xn--` prefix) stands for; nil when it is not
    /// valid Punycode (a bad digit, an overflow, a code point that is no Unicode scalar).
    static func decode(_ encoded: Substring) -> String? {
        let input = Array(encoded.unicodeScalars)
        var output: [Unicode.Scalar] = []
        // The basic code points come first, up to the last delimiter.
        let delimiter = input.lastIndex(of: "-")
        if let delimiter {
            for scalar in input[..<delimiter] {
                guard scalar.isASCII else { return nil }
                output.append(scalar)
            }
        }
        var position = delimiter.map { $0 + 1 } ?? 0
        var (n, i, bias) = (initialN, 0, initialBias)
        while position < input.count {
            let oldI = i
            var weight = 1
            var k = base
            while true {
                guard position < input.count, let digit = digitValue(input[position]) else { return nil }
                position += 1
                let (product, overflow) = digit.multipliedReportingOverflow(by: weight)
                guard !overflow, i <= Int.max - product else { return nil }
                i += product
                let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                if digit < t { break }
                let (next, nextOverflow) = weight.multipliedReportingOverflow(by: base - t)
                guard !nextOverflow else { return nil }
                weight = next
                k += base
            }
            bias = adapt(i - oldI, count: output.count + 1, first: oldI == 0)
            guard i / (output.count + 1) <= Int.max - n else { return nil }
            n += i / (output.count + 1)
            i %= output.count + 1
            guard n <= 0x10FFFF, let scalar = Unicode.Scalar(UInt32(n)) else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        var result = ""
        result.unicodeScalars.append(contentsOf: output)
        return result
    }

    private static func digitValue(_ scalar: Unicode.Scalar) -> Int? {
        switch scalar.value {
        case 0x61...0x7A: Int(scalar.value - 0x61) // a-z
        case 0x41...0x5A: Int(scalar.value - 0x41) // A-Z
        case 0x30...0x39: Int(scalar.value - 0x30) + 26 // 0-9
        default: nil
        }
    }

    private static func adapt(_ delta: Int, count: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
