#if canImport(FoundationNetworking)
import Foundation
public import FoundationNetworking
#else
public import Foundation
#endif

/// Where a response delivered by ``HTTPCacheURLProtocol`` came from, as its `Stash-Cache` header
/// field says.
///
/// Every response the protocol delivers carries the field, so code that does not import StashHTTP
/// can read it as text:
///
/// ```
/// Stash-Cache: network; age=0
/// Stash-Cache: cache; age=42
/// Stash-Cache: revalidated; age=0
/// Stash-Cache: stale; age=600; error="Could not connect to the server."
/// ```
///
/// The value is a token (the source) followed by parameters in the syntax of RFC 8941 structured
/// fields: `age` in whole seconds (RFC 9111 `current_age`), and for a stale response `error`, a
/// quoted string with the description of why it was served stale (the network error's
/// `localizedDescription`, the 5xx, or the policy that accepted it). Code that imports StashHTTP
/// reads it typed with `HTTPURLResponse.cacheStatus`.
public struct HTTPCacheStatus: Sendable, Hashable, CustomStringConvertible {
    /// Where the response came from; see ``ResponseSource``.
    public enum Source: String, Sendable, Hashable, CaseIterable {
        /// Loaded from the server.
        case network
        /// A fresh stored response; the network was not asked.
        case cache
        /// A stored response the server confirmed with 304 Not Modified.
        case revalidated
        /// A stored response served without a successful exchange with the server.
        case stale
    }

    /// The name of the header field: `Stash-Cache`.
    public static let headerName = "Stash-Cache"

    /// Where the response came from.
    public var source: Source
    /// The response's age in whole seconds when it was served. 64 bits wide on every platform: an age
    /// may pass 2^31 seconds (RFC 9111 caps a received `Age` there, and time adds to it), which a
    /// 32-bit `Int` (Apple Watch) cannot hold.
    public var age: Int64
    /// For a stale response, why: the description of the network error or of the policy that
    /// accepted it; nil for the other sources.
    public var staleReason: String?

    /// Creates a status.
    /// - Parameters:
    ///   - source: Where the response came from.
    ///   - age: Its age in whole seconds.
    ///   - staleReason: Why a stale response was served.
    public init(source: Source, age: Int64, staleReason: String? = nil) {
        self.source = source
        self.age = max(0, age)
        self.staleReason = staleReason
    }

    /// The status of a response the cache served.
    /// - Parameter response: A response from ``HTTPCache``.
    public init(_ response: CachedResponse) {
        let age = Self.wholeSeconds(response.age)
        switch response.source {
        case .network: self.init(source: .network, age: age)
        case .cache: self.init(source: .cache, age: age)
        case .revalidated: self.init(source: .revalidated, age: age)
        case .stale(let error): self.init(source: .stale, age: age, staleReason: error.localizedDescription)
        }
    }

    /// `seconds` rounded down, clamped to 0...Int64.max (NaN is 0).
    static func wholeSeconds(_ seconds: TimeInterval) -> Int64 {
        guard seconds > 0 else { return 0 }
        // 2^63 as a Double: anything from there on would trap in `Int64(_:)`.
        return seconds >= 9_223_372_036_854_775_808 ? .max : Int64(seconds.rounded(.down))
    }

    /// Reads a `Stash-Cache` field value; nil when it is not one.
    /// - Parameter headerValue: The field value, for example `stale; age=600; error="offline"`.
    public init?(headerValue: String) {
        var scanner = FieldScanner(headerValue)
        guard let token = scanner.token(), let source = Source(rawValue: token) else { return nil }
        var age: Int64 = 0
        var reason: String?
        while scanner.skip(";") {
            guard let name = scanner.token(), scanner.skip("=") else { return nil }
            switch name {
            case "age":
                guard let value = scanner.token().flatMap({ Int64($0) }) else { return nil }
                age = value
            case "error":
                guard let value = scanner.quotedString() else { return nil }
                reason = value
            default:
                // Parameters a later version may add are skipped.
                guard scanner.quotedString() != nil || scanner.token() != nil else { return nil }
            }
        }
        guard scanner.isAtEnd else { return nil }
        self.init(source: source, age: age, staleReason: reason)
    }

    /// The field value: `source; age=N`, plus `; error="…"` for a stale response.
    public var headerValue: String {
        var value = "\(source.rawValue); age=\(age)"
        if let staleReason { value += "; error=\(FieldScanner.quoted(staleReason))" }
        return value
    }

    /// The field value, as it appears in the response.
    public var description: String { headerValue }
}

extension HTTPURLResponse {
    /// Where a response delivered through ``HTTPCacheURLProtocol`` came from (its `Stash-Cache`
    /// field, typed); nil for a response that did not pass through the protocol.
    public var cacheStatus: HTTPCacheStatus? {
        value(forHeaderField: HTTPCacheStatus.headerName).flatMap(HTTPCacheStatus.init(headerValue:))
    }

    private func value(forHeaderField name: String) -> String? {
        for (key, value) in allHeaderFields {
            if let key = key as? String, key.caseInsensitiveCompare(name) == .orderedSame { return "\(value)" }
        }
        return nil
    }
}

/// Just enough of RFC 8941's structured-field syntax for the `Stash-Cache` field: tokens, `;`, `=`
/// and quoted strings with `\"` and `\\` escapes.
struct FieldScanner {
    private let characters: [Character]
    private var index = 0

    init(_ text: String) {
        characters = Array(text)
    }

    var isAtEnd: Bool {
        mutating get { skipSpaces(); return index == characters.count }
    }

    mutating func skip(_ character: Character) -> Bool {
        skipSpaces()
        guard index < characters.count, characters[index] == character else { return false }
        index += 1
        return true
    }

    mutating func token() -> String? {
        skipSpaces()
        let start = index
        while index < characters.count, characters[index].isLetter || characters[index].isNumber
                || "-_.*".contains(characters[index]) {
            index += 1
        }
        return index > start ? String(characters[start..<index]) : nil
    }

    mutating func quotedString() -> String? {
        skipSpaces()
        guard index < characters.count, characters[index] == "\"" else { return nil }
        var value = ""
        var position = index + 1
        while position < characters.count {
            let character = characters[position]
            if character == "\"" {
                index = position + 1
                return value
            }
            if character == "\\" {
                position += 1
                guard position < characters.count else { return nil }
            }
            value.append(characters[position])
            position += 1
        }
        return nil
    }

    /// `text` as a quoted string; line breaks and other control characters, which may not appear
    /// in a header field, become spaces.
    static func quoted(_ text: String) -> String {
        var result = "\""
        for character in text {
            switch character {
            case "\"", "\\": result += "\\" + String(character)
            case _ where character.unicodeScalars.contains { $0.properties.generalCategory == .control }: result += " "
            default: result.append(character)
            }
        }
        return result + "\""
    }

    private mutating func skipSpaces() {
        while index < characters.count, characters[index] == " " || characters[index] == "\t" { index += 1 }
    }
}
