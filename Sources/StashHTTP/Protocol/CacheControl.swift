import Foundation

/// The directives of a `Cache-Control` field (RFC 9111 §5.2), as a private cache reads them.
///
/// Directive names are case-insensitive; a value may be a token or a quoted string (which may itself
/// contain commas, as in `no-cache="Set-Cookie, X-Token"`). When a directive appears twice the first
/// one counts. Unknown directives are kept so that extensions (RFC 5861) can be read by name.
struct CacheControl: Sendable, Equatable {
    /// Directive name (lower-cased) → argument (nil for a directive without one).
    private(set) var directives: [String: String?] = [:]

    init(_ field: String?) {
        guard let field else { return }
        for (name, value) in Self.parse(field) where directives[name] == nil {
            directives[name] = .some(value)
        }
    }

    /// Whether the directive is present, with or without an argument.
    func has(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds argument (RFC 9111 §1.2.2): digits only, capped at 2^31 as the RFC asks for
    /// larger values (however many digits they have); nil when absent or not a number.
    func seconds(_ name: String) -> TimeInterval? {
        guard let argument = directives[name], let text = argument, let value = DeltaSeconds.parse(text) else { return nil }
        return TimeInterval(value)
    }

    var noStore: Bool { has("no-store") }
    var noCache: Bool { has("no-cache") }
    var maxAge: TimeInterval? { seconds("max-age") }
    var mustRevalidate: Bool { has("must-revalidate") }
    var immutable: Bool { has("immutable") }
    var staleIfError: TimeInterval? { seconds("stale-if-error") }
    var staleWhileRevalidate: TimeInterval? { seconds("stale-while-revalidate") }
    var onlyIfCached: Bool { has("only-if-cached") }
    var minFresh: TimeInterval? { seconds("min-fresh") }

    /// `max-stale` as a request sends it: nil when absent, `.infinity` without an argument (any staleness).
    var maxStale: TimeInterval? {
        guard let argument = directives["max-stale"] else { return nil }
        return argument == nil ? .infinity : seconds("max-stale") ?? .infinity
    }

    /// Splits a field into (name, argument) pairs, honouring quoted strings.
    private static func parse(_ field: String) -> [(String, String?)] {
        var result: [(String, String?)] = []
        var characters = Substring(field)
        while !characters.isEmpty {
            characters = characters.drop(while: { $0 == " " || $0 == "\t" || $0 == "," })
            let rawName = characters.prefix(while: { $0 != "=" && $0 != "," })
            let name = rawName.trimmingCharacters(in: .whitespaces)
            characters = characters.dropFirst(rawName.count)
            var value: String?
            if characters.first == "=" {
                characters = characters.dropFirst()
                if characters.first == "\"" {
                    var text = ""
                    characters = characters.dropFirst()
                    while let next = characters.first, next != "\"" {
                        characters = characters.dropFirst()
                        if next == "\\", let escaped = characters.first {
                            text.append(escaped)
                            characters = characters.dropFirst()
                        } else {
                            text.append(next)
                        }
                    }
                    characters = characters.dropFirst() // the closing quote
                    value = text
                } else {
                    value = characters.prefix(while: { $0 != "," }).trimmingCharacters(in: .whitespaces)
                }
                characters = characters.drop(while: { $0 != "," })
            }
            if !name.isEmpty { result.append((name.lowercased(), value)) }
        }
        return result
    }
}
