import Foundation

/// The one byte range of a `Range` request field that the cache answers itself (RFC 9110 §14.1.2):
/// `bytes=first-last`, `bytes=first-` or `bytes=-suffixLength`.
///
/// Other units, several ranges (which need a `multipart/byteranges` answer) and invalid syntax are
/// not parsed: such a request goes to the server as it is. Positions are `Int64`, as the field may
/// name bytes past 2 GiB that a 32-bit `Int` (Apple Watch) cannot hold.
enum ByteRangeSpec: Sendable, Equatable {
    /// From `first` to `last` (inclusive), or to the end when `last` is nil.
    case from(first: Int64, last: Int64?)
    /// The last `length` bytes.
    case suffix(length: Int64)

    /// Parses a `Range` field; nil unless it is one valid `bytes` range.
    init?(rangeField: String) {
        let field = rangeField.trimmingCharacters(in: .whitespaces)
        guard let equals = field.firstIndex(of: "="), field[..<equals].trimmingCharacters(in: .whitespaces).lowercased() == "bytes"
        else { return nil }
        let specs = field[field.index(after: equals)...].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard specs.count == 1, let dash = specs[0].firstIndex(of: "-") else { return nil }
        let firstText = specs[0][..<dash], lastText = specs[0][specs[0].index(after: dash)...]
        guard firstText.allSatisfy(\.isASCIIDigit), lastText.allSatisfy(\.isASCIIDigit), firstText.count <= 18, lastText.count <= 18
        else { return nil }
        if firstText.isEmpty {
            guard let length = Int64(lastText) else { return nil }
            self = .suffix(length: length)
        } else {
            guard let first = Int64(firstText) else { return nil }
            let last = lastText.isEmpty ? nil : Int64(lastText)
            if let last, last < first { return nil } // invalid: the field is not a range the cache answers
            self = .from(first: first, last: last)
        }
    }

    /// The bytes it selects of a representation `length` bytes long; nil when unsatisfiable
    /// (RFC 9110 §14.1.1: a first byte past the end, or a zero suffix).
    /// Computed in `Int64`; the bounds returned lie inside `length`, so they fit an `Int`.
    func resolved(length: Int) -> ClosedRange<Int>? {
        let length = Int64(length)
        let range: ClosedRange<Int64>
        switch self {
        case .from(let first, let last):
            guard first < length else { return nil }
            range = first...min(last ?? length - 1, length - 1)
        case .suffix(let suffix):
            guard suffix > 0, length > 0 else { return nil }
            range = max(0, length - suffix)...(length - 1)
        }
        return Int(range.lowerBound)...Int(range.upperBound)
    }
}

/// A `Content-Range` field of a 206 (RFC 9110 §14.4): `bytes first-last/complete-length`.
struct ContentRange: Sendable, Equatable {
    var range: ClosedRange<Int>
    /// The length of the whole representation; nil for `*` (unknown).
    var completeLength: Int?

    init(range: ClosedRange<Int>, completeLength: Int?) {
        self.range = range
        self.completeLength = completeLength
    }

    /// Parses `bytes 0-499/1234` or `bytes 0-499/*`; nil for anything else (`bytes */1234` included).
    init?(_ field: String) {
        let field = field.trimmingCharacters(in: .whitespaces)
        guard field.lowercased().hasPrefix("bytes ") else { return nil }
        let rest = field.dropFirst("bytes ".count)
        let halves = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, bounds.allSatisfy({ !$0.isEmpty && $0.count <= 18 && $0.allSatisfy(\.isASCIIDigit) }),
              let first = Int(bounds[0]), let last = Int(bounds[1]), first <= last else { return nil }
        if halves[1] == "*" {
            completeLength = nil
        } else {
            guard !halves[1].isEmpty, halves[1].count <= 18, halves[1].allSatisfy(\.isASCIIDigit), let length = Int(halves[1]),
                  last < length else { return nil }
            completeLength = length
        }
        range = first...last
    }

    /// The field value for `range` of a representation `length` bytes long.
    static func field(_ range: ClosedRange<Int>, of length: Int) -> String {
        "bytes \(range.lowerBound)-\(range.upperBound)/\(length)"
    }

    /// The field value of a 416 answer: `bytes */length`.
    static func unsatisfiedField(length: Int) -> String { "bytes */\(length)" }
}

/// Validator comparisons (RFC 9110 §8.8.3.2).
enum EntityTag {
    /// Whether `tag` is a strong entity tag (quoted, without `W/`).
    static func isStrong(_ tag: String) -> Bool {
        let tag = tag.trimmingCharacters(in: .whitespaces)
        return tag.count >= 2 && tag.hasPrefix("\"") && tag.hasSuffix("\"")
    }

    /// The strong comparison: both strong and character for character equal.
    static func stronglyEqual(_ a: String?, _ b: String?) -> Bool {
        guard let a = a?.trimmingCharacters(in: .whitespaces), let b = b?.trimmingCharacters(in: .whitespaces) else { return false }
        return isStrong(a) && a == b
    }

    /// The weak comparison: equal once any `W/` prefix is dropped.
    static func weaklyEqual(_ a: String, _ b: String) -> Bool {
        func opaque(_ tag: String) -> String {
            let tag = tag.trimmingCharacters(in: .whitespaces)
            return tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag
        }
        return opaque(a) == opaque(b)
    }

    /// RFC 9110 §13.1.5: whether an `If-Range` value (an entity tag or a date) still names the
    /// representation described by `headers`. An entity tag must match strongly; a date must equal
    /// `Last-Modified` exactly.
    static func ifRangeMatches(_ ifRange: String, headers: HTTPHeaders) -> Bool {
        let value = ifRange.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("\"") || value.hasPrefix("W/") { return stronglyEqual(value, headers["etag"]) }
        guard let date = HTTPDate.parse(value), let lastModified = headers["last-modified"].flatMap({ HTTPDate.parse($0) })
        else { return false }
        return date == lastModified
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
