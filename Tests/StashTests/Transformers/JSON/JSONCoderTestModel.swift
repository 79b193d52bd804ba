import Foundation
import StashTestSupport
@testable import Stash
@testable import StashEngine

/// A value that reaches every path of the JSON coder: every special type, optionals, nested arrays,
/// dictionaries keyed by `String` and `Int`, enums with associated values, and recursion.
struct CoderTree: Codable, Equatable {
    var name: String
    var count: Int
    var ratio: Double
    var single: Float
    var small: Int8
    var big: UInt64
    var middle: Int32
    var flag: Bool?
    var when: Date
    var blob: Data
    var link: URL?
    var amount: Decimal
    var id: UUID
    var tags: [String]
    var numbers: [Int]
    var byName: [String: Int]
    var byNumber: [Int: String]
    var shape: CoderShape
    var maybeChild: [CoderTree?]
    var children: [CoderTree]
}

indirect enum CoderShape: Codable, Equatable {
    case none
    case circle(radius: Double)
    case labelled(String, Int?)
    case nested(CoderTree?)
}

/// The `Codable` models the test suites store (their shapes, copied from the suites where they are
/// private), with a value each.
enum SuiteModels {
    struct Profile: Codable, Equatable { var name: String; var visits: Int }
    struct Tag: Codable, Equatable { var label: String }
    struct Todo: Codable, Equatable { var title: String; var done: Bool }
    struct TitleOnly: Codable, Equatable { var title: String }
    struct Session: Codable, Equatable { var user: String; var cart: [String] }
    struct Person1: Codable, Equatable { let fullName: String }
    struct Person2: Codable, Equatable { let firstName: String; let lastName: String }
    struct UserV2: Codable, Equatable { var name: String; var email: String }
}

/// Random values from a seed: failures name the seed, and the same seed gives the same value.
struct CoderValues {
    var random: SeededGenerator
    /// Dates whose seconds are whole, for `.iso8601` (which keeps no fractions).
    var wholeSeconds = false
    /// Include NaN and infinities in `ratio`.
    var nonFinite = false

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    static let specialStrings = [
        "", "plain", "quote \" backslash \\ slash /", "\u{0}\u{1}\u{1F}\u{7F}", "\n\r\t\u{8}\u{C}", "é", "日本語", "😀👍🏽",
        "\u{2028}\u{2029}", "e\u{301}", "\u{FEFF}bom", "\\u0041", "{\"not\": \"json\"}", String(repeating: "long ", count: 40),
    ]
    static let specialDoubles: [Double] = [
        0, -0.0, 1, -1, 0.1, 1.0 / 3, 1e21, 1e-7, 123456789.125, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        .leastNonzeroMagnitude, .leastNormalMagnitude, 9.007199254740994e15, 1e16, 4.35, 2.5e-308,
    ]

    mutating func below(_ bound: Int) -> Int { random.below(bound) }
    mutating func bool() -> Bool { random.next() & 1 == 1 }

    mutating func string() -> String {
        if below(3) == 0 { return Self.specialStrings[below(Self.specialStrings.count)] }
        let alphabet: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\u{1}", "\u{E9}", "\u{65E5}", "\u{1F600}", "\u{10FFFF}", "_"]
        var text = ""
        for _ in 0..<below(12) { text.unicodeScalars.append(alphabet[below(alphabet.count)]) }
        return text
    }

    mutating func double() -> Double {
        if nonFinite && below(4) == 0 { return [Double.nan, .infinity, -.infinity][below(3)] }
        switch below(4) {
        case 0: return Self.specialDoubles[below(Self.specialDoubles.count)]
        case 1: return Double(Int64(bitPattern: random.next()) >> below(60))
        case 2: return Double(random.next() % 1_000_000) / 1000
        default:
            let value = Double(bitPattern: random.next())
            return value.isFinite ? value : 0.5
        }
    }

    mutating func date() -> Date {
        let seconds = Double(Int64(random.next() % 4_000_000_000) - 1_000_000_000)
        return Date(timeIntervalSince1970: wholeSeconds ? seconds : seconds + Double(below(1000)) / 1000)
    }

    mutating func tree(depth: Int = 0) -> CoderTree {
        let integers = [Int.min, Int.max, 0, -1, 1 << 53, (1 << 53) + 1]
        return CoderTree(
            name: string(),
            count: below(2) == 0 ? integers[below(integers.count)] : Int(truncatingIfNeeded: random.next()),
            ratio: double(),
            single: [Float(0.1), .greatestFiniteMagnitude, 3, -0.0, Float(below(1000)) / 7][below(5)],
            small: Int8(truncatingIfNeeded: random.next()),
            big: below(2) == 0 ? .max : random.next(),
            middle: Int32(truncatingIfNeeded: random.next()),
            flag: below(3) == 0 ? nil : bool(),
            when: date(),
            blob: Data((0..<below(20)).map { _ in UInt8(truncatingIfNeeded: random.next()) }),
            link: below(3) == 0 ? nil : URL(string: ["https://example.com/a?b=c&d=%20", "file:///tmp/x%20y", "mailto:a@b.c", "https://例え.jp/パス"][below(4)]),
            amount: [Decimal(string: "123.4500")!, Decimal(string: "-0.00001")!, Decimal(below(1_000_000)) / 100, Decimal(string: "99999999999999999999.5")!][below(4)],
            id: UUID(uuid: (UInt8(below(256)), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, UInt8(below(256)))),
            tags: (0..<below(4)).map { _ in string() },
            numbers: (0..<below(4)).map { _ in Int(truncatingIfNeeded: random.next()) >> below(64) },
            byName: Dictionary((0..<below(3)).map { _ in (string(), below(100)) }, uniquingKeysWith: { first, _ in first }),
            byNumber: Dictionary((0..<below(3)).map { _ in (below(2) == 0 ? -below(100) : below(1000), string()) }, uniquingKeysWith: { first, _ in first }),
            shape: shape(depth: depth),
            maybeChild: depth < 2 && below(3) == 0 ? [nil, tree(depth: depth + 1)] : [],
            children: depth < 2 ? (0..<below(3)).map { _ in tree(depth: depth + 1) } : []
        )
    }

    mutating func shape(depth: Int) -> CoderShape {
        switch below(4) {
        case 0: return .none
        case 1: return .circle(radius: double())
        case 2: return .labelled(string(), below(2) == 0 ? nil : below(10))
        default: return .nested(depth < 2 && below(2) == 0 ? tree(depth: depth + 1) : nil)
        }
    }
}
